// notes-portal table of contents: a filter box that narrows the tree as you type, the folder a link points
// at (#dir-…) opened, and, in a big source, the folders the page does not hold loaded when opened: a
// <details data-part> gets its contents from static/toc/<source>/<part>.js, which calls
// notesPortalToc(part, html) (a script, so that it also loads from file://), and a "More notes…" button
// its folder's next notes. Without this script the page is the tree in plain <details>. Words match
// anywhere in a note's title, file name, tags and headings or in its folder's path, without diacritics
// and in any case; every word must match (in a big source, once every folder is loaded).
(function () {
  "use strict";

  var DEBOUNCE_MS = 120;
  var loaded = {};   // part → its HTML
  var waiting = {};  // part → callbacks waiting for it

  window.notesPortalToc = function (part, html) {
    loaded[part] = html;
    (waiting[part] || []).forEach(function (done) { done(html); });
    delete waiting[part];
  };

  function fold(text) {
    return text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }

  // Load a part once (nav.js's notesPortalScript: revalidated over HTTP, as the tree's pieces are).
  function loadPart(base, part, done) {
    if (part in loaded) { done(loaded[part]); return; }
    if (waiting[part]) { waiting[part].push(done); return; }
    waiting[part] = [done];
    window.notesPortalScript(base + part + ".js");
  }

  // Fill a folder (its <details data-part>) or a "More notes…" button from its part; ``done`` after.
  function fill(tree, holder, done) {
    var part = holder.getAttribute("data-part");
    if (!part) { if (done) done(); return; }
    holder.removeAttribute("data-part");
    loadPart(tree.getAttribute("data-parts"), part, function (html) {
      var box = document.createElement("div");
      box.innerHTML = html;
      if (holder.tagName === "DETAILS") {
        var body = holder.querySelector(".toc-dir-body");
        body.textContent = "";
        while (box.firstChild) body.appendChild(box.firstChild);
      } else {  // the button: its folder's next notes take its paragraph's place
        var paragraph = holder.parentNode;
        while (box.firstChild) paragraph.parentNode.insertBefore(box.firstChild, paragraph);
        paragraph.parentNode.removeChild(paragraph);
      }
      tree.dispatchEvent(new CustomEvent("toc-filled"));
      if (done) done();
    });
  }

  // Every part of the page, loaded (the filter needs every note); ``done`` once none is left.
  function fillAll(tree, done) {
    var left = tree.querySelector("[data-part]");
    if (!left) { done(); return; }
    fill(tree, left, function () { fillAll(tree, done); });
  }

  function setupParts(tree) {
    tree.addEventListener("toggle", function (event) {
      var details = event.target;
      if (details.tagName === "DETAILS" && details.open && details.hasAttribute("data-part")) fill(tree, details);
    }, true);  // toggle does not bubble
    tree.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("button[data-part]");
      if (button) { button.disabled = true; fill(tree, button); }
    });
  }

  function setupFilter(box, tree) {
    var input = box.querySelector(".toc-filter-input");
    var status = box.querySelector(".toc-filter-status");
    var notes, folders, texts, within, wasOpen, timer = null;

    function read() {  // the notes and folders on the page now (again after a part is loaded)
      notes = Array.prototype.slice.call(tree.querySelectorAll("li.toc-note"));
      folders = Array.prototype.slice.call(tree.querySelectorAll("details.toc-dir"));
      texts = null;  // folded text of each note (with its folder's path), made on first use
      within = null;  // for each note, the indexes of the folders around it
      wasOpen = folders.map(function (d) { return d.open; });
    }
    read();
    tree.addEventListener("toc-filled", function () { if (!input.value) read(); });

    function prepare() {
      var index = new Map(folders.map(function (d, i) { return [d, i]; }));
      texts = [];
      within = notes.map(function (note) {
        var body = note.closest(".toc-dir-body");
        texts.push(fold(note.textContent + " " + (body ? body.getAttribute("data-path") || "" : "")));
        var around = [];
        for (var d = note.closest("details.toc-dir"); d; d = d.parentElement.closest("details.toc-dir")) {
          around.push(index.get(d));
        }
        return around;
      });
    }

    function apply() {
      var words = fold(input.value).split(/\s+/).filter(Boolean);
      var say = window.notesPortalSay;
      if (words.length && tree.querySelector("[data-part]")) {  // a big source: every folder first
        status.textContent = say("nav.loading");
        fillAll(tree, function () { read(); apply(); });
        return;
      }
      if (!texts) prepare();
      if (!words.length) {
        notes.forEach(function (note) { if (note.hidden) note.hidden = false; });
        folders.forEach(function (d, i) { d.hidden = false; d.open = wasOpen[i]; });
        status.textContent = "";
        return;
      }
      var shown = 0, counts = folders.map(function () { return 0; });
      notes.forEach(function (note, i) {
        var match = words.every(function (w) { return texts[i].indexOf(w) >= 0; });
        if (note.hidden === match) note.hidden = !match;  // touch the DOM only where it changes
        if (match) {
          shown++;
          within[i].forEach(function (f) { counts[f]++; });
        }
      });
      folders.forEach(function (d, i) {  // a folder stays while it holds a shown note, and opens
        var any = counts[i] > 0;
        if (d.hidden === any) d.hidden = !any;
        if (d.open !== any) d.open = any;
      });
      status.textContent = shown ? say("toc.matches", { shown: shown, total: notes.length }) : say("toc.no_match");
    }

    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(apply, DEBOUNCE_MS);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Escape") { input.value = ""; apply(); }
    });
    box.classList.add("toc-filter-ready");
  }

  // A link to a folder (…/index.html#dir-recepty): open it and the folders around it. In a big source the
  // folder may be in a part not loaded yet: the folders whose anchor starts its anchor are loaded, deepest
  // first, until it shows.
  function openTarget(tree) {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target && id.indexOf("dir-") === 0 && tree) {
      var around = Array.prototype.slice.call(tree.querySelectorAll("details[data-part] > .toc-dir-body"))
        .filter(function (body) { return id.indexOf(body.id + "-") === 0; })
        .sort(function (a, b) { return b.id.length - a.id.length; });
      if (around.length) fill(tree, around[0].parentNode, function () { openTarget(tree); });
      return;
    }
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    if (!target) return;
    // Notes off screen are laid out when they come near (content-visibility: auto), which moves
    // what is below them: scroll again once that has settled.
    target.scrollIntoView({ block: "start" });
    requestAnimationFrame(function () {
      requestAnimationFrame(function () { target.scrollIntoView({ block: "start" }); });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.querySelector(".toc-filter");
    var tree = document.getElementById("toc-tree");
    if (tree) setupParts(tree);
    if (box && tree) setupFilter(box, tree);
    openTarget(tree);
    window.addEventListener("hashchange", function () { openTarget(tree); });
  });
})();
