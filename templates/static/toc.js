// notes-portal table of contents: a filter box that narrows the tree as you type, and the folder
// a link points at (#dir-…) opened. Without this script the page is the whole tree in plain
// <details>. Words match anywhere in a note's title, file name, tags and headings or in its
// folder's path, without diacritics and in any case; every word must match.
(function () {
  "use strict";

  var DEBOUNCE_MS = 120;

  function fold(text) {
    return text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }

  function setupFilter(box, tree) {
    var input = box.querySelector(".toc-filter-input");
    var status = box.querySelector(".toc-filter-status");
    var notes = Array.prototype.slice.call(tree.querySelectorAll("li.toc-note"));
    var folders = Array.prototype.slice.call(tree.querySelectorAll("details.toc-dir"));
    var texts = null;  // folded text of each note (with its folder's path), made on first use
    var within = null;  // for each note, the indexes of the folders around it
    var wasOpen = folders.map(function (d) { return d.open; });
    var timer = null;

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
      var say = window.notesPortalSay;
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

  // A link to a folder (…/index.html#dir-recepty): open it and the folders around it.
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
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
    if (box && tree) setupFilter(box, tree);
    openTarget();
    window.addEventListener("hashchange", openTarget);
  });
})();
