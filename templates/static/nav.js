// notes-portal navigation: each source's folder tree beside every page (a drawer on a phone).
// The page lists the sources (links to their tables of contents: that is the no-JS fallback);
// this script loads static/tree/<source>.js, which calls notesPortalTree(source, tree), and
// draws the tree of the page's source open at the page's folder. Folders are <details>; their
// contents are built when first opened. A big source's tree comes in parts (builder/render/tree.py):
// a folder given as a part id is loaded from static/tree/<source>/<id>.js when it is opened, and a
// folder's notes past a part's worth come from the part its "m" names ("More notes…", or at once when
// the page's note is among them). No framework, no inline script (the CSP forbids it).
(function () {
  "use strict";

  var trees = {};    // source + "\n" + part id ("" the root) → tree, once loaded
  var waiting = {};  // the same keys → callbacks waiting for the part
  var messages = null;  // the page's words (its <script type="application/json" id="ui-messages">)

  // The portal's words for ``key`` in the page's language (builder/core/messages.py), with ``values`` put in
  // for {name}; a count's forms are chosen by ``n``, numbers written as the language writes them. The other
  // scripts (search.js, toc.js, mermaid-init.js) say their words through it too.
  function say(key, values) {
    if (messages === null) {
      var node = document.getElementById("ui-messages");
      try { messages = node ? JSON.parse(node.textContent) : {}; } catch (e) { messages = {}; }
    }
    var lang = document.documentElement.lang, slavic = lang === "cs" || lang === "sk";
    var text = messages[key];
    if (text == null) return key;
    if (Array.isArray(text)) {
      var n = Number((values || {}).n);
      text = text[n === 1 ? 0 : (slavic && n >= 2 && n <= 4 ? 1 : 2)];
    }
    return text.replace(/\{(\w+)\}/g, function (whole, name) {
      if (!values || !(name in values)) return whole;
      var value = values[name];
      if (typeof value === "number") {
        value = value.toLocaleString("en-US");
        if (slavic) value = value.replace(/,/g, "\u00a0");
      }
      return String(value);
    });
  }
  window.notesPortalSay = say;

  window.notesPortalTree = function (source, tree, part) {
    var key = source + "\n" + (part || "");
    trees[key] = tree;
    (waiting[key] || []).forEach(function (done) { done(tree); });
    delete waiting[key];
  };

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text != null) node.textContent = text;
    return node;
  }

  // Run one of the site's data scripts (a piece of a tree or of a table of contents). Over HTTP it is
  // revalidated first (its URL has no version: a page must not change when another note's title does), so a
  // new note shows up at once; from file:// a script is all a page may load. toc.js loads its pieces so too.
  function addScript(url) {
    function add() {
      var script = document.createElement("script");
      script.src = url;
      document.head.appendChild(script);
    }
    if (window.location.protocol === "file:" || !window.fetch) add();
    else fetch(url, { cache: "no-cache" }).then(add, add);
  }
  window.notesPortalScript = addScript;

  // Load one part of a source's tree once (part "": the root, at ``url``; another part sits in the folder
  // named as the root's script without ".js").
  function loadTree(source, url, part, done) {
    var key = source + "\n" + part;
    if (part) url = url.replace(/\.js$/, "/" + part + ".js");
    if (trees[key]) { done(trees[key]); return; }
    if (waiting[key]) { waiting[key].push(done); return; }
    waiting[key] = [done];
    addScript(url);
  }

  // One folder's contents: subfolders first (each a <details>), then its notes. A folder alone in
  // its parent (``pages/`` holding a whole Grav wiki) opens with it: a click would show nothing else.
  // ``nav.url`` is the source's root script, from which the other parts are found.
  function contents(tree, source, base, path, nav) {
    var list = el("ul", "tree");
    var alone = (tree.d || []).length === 1 && !(tree.n || []).length;
    (tree.d || []).forEach(function (folder) {
      var name = folder[0], segment = folder[1], sub = folder[2];
      var folderPath = path ? path + "/" + name : name;
      var item = el("li", "tree-folder");
      var details = el("details");
      var summary = el("summary", null, name);
      summary.title = name;  // a long name is cut short on screen, as the notes' are
      details.appendChild(summary);
      var filled = false;
      function fill() {
        if (filled) return;
        filled = true;
        if (typeof sub !== "string") {
          details.appendChild(contents(sub, source, base + segment + "/", folderPath, nav));
          return;
        }
        var placeholder = el("p", "muted nav-loading", say("nav.loading"));
        details.appendChild(placeholder);
        loadTree(source, nav.url, sub, function (part) {
          details.replaceChild(contents(part, source, base + segment + "/", folderPath, nav), placeholder);
          nav.loaded();
        });
      }
      details.addEventListener("toggle", function () { if (details.open) fill(); });
      if (alone || nav.folder === folderPath || nav.folder.indexOf(folderPath + "/") === 0) {
        details.open = true;
        fill();
      }
      item.appendChild(details);
      list.appendChild(item);
    });
    addNotes(list, tree, source, base, path, nav);
    return list;
  }

  // A folder's notes into ``list``; past a part's worth, a "More notes…" button that brings the next part
  // (brought at once in the page's own folder until the page's note is listed).
  function addNotes(list, tree, source, base, path, nav) {
    var found = false;
    (tree.n || []).forEach(function (note) {
      var url = base + note[1];
      var item = el("li", "tree-note");
      var link = el("a", null, note[0]);
      link.title = note[0];
      link.href = nav.root + url;
      if (url === nav.page) {
        link.setAttribute("aria-current", "page");
        item.classList.add("current");
        found = true;
      }
      item.appendChild(link);
      list.appendChild(item);
    });
    if (!tree.m) return;
    var more = el("li", "tree-more");
    var button = el("button", null, say("nav.more"));
    button.type = "button";
    more.appendChild(button);
    list.appendChild(more);
    function next() {
      button.disabled = true;
      loadTree(source, nav.url, tree.m, function (part) {
        list.removeChild(more);
        addNotes(list, part, source, base, path, nav);
        nav.loaded();
      });
    }
    button.addEventListener("click", next);
    if (!found && !list.querySelector("[aria-current=page]") && nav.folder === path && nav.page.indexOf(base) === 0) {
      next();
    }
  }

  // Turn a source's entry (a link to its table of contents) into a collapsible tree.
  function setupSource(item, nav) {
    var source = item.getAttribute("data-source");
    var details = el("details", "nav-source-tree");
    var summary = el("summary", null, source);
    details.appendChild(summary);
    var links = el("p", "nav-source-links");
    var toc = el("a", null, say("nav.contents"));
    toc.href = item.getAttribute("data-toc");
    var graph = el("a", null, say("nav.graph"));
    graph.href = item.getAttribute("data-graph");
    links.appendChild(toc);
    links.appendChild(document.createTextNode(" · "));
    links.appendChild(graph);
    details.appendChild(links);
    var filled = false;
    function fill() {
      if (filled) return;
      filled = true;
      var placeholder = el("p", "muted nav-loading", say("nav.loading"));
      details.appendChild(placeholder);
      var url = item.getAttribute("data-tree");
      loadTree(source, url, "", function (tree) {
        var here = { root: nav.root, page: nav.page, folder: source === nav.source ? nav.folder : "\u0000", url: url,
                     loaded: function () { if (source === nav.source) reveal(item); } };
        details.replaceChild(contents(tree, source, source + "/", "", here), placeholder);
        here.loaded();
      });
    }
    details.addEventListener("toggle", function () { if (details.open) fill(); });
    item.textContent = "";
    item.appendChild(details);
    if (source === nav.source || nav.only) {
      details.open = true;
      fill();
    }
  }

  // Scroll the tree (not the page) so that the current note is in view.
  function reveal(item) {
    var current = item.querySelector("[aria-current=page]");
    var box = document.getElementById("site-nav");
    if (!current || !box) return;
    var top = current.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    if (top > box.clientHeight * 0.6) box.scrollTop = top - box.clientHeight / 3;
  }

  // A code block, formula, table, diagram or picture wider than the screen scrolls sideways: it takes the
  // keyboard's focus then (tabindex 0), so that a reader without a mouse can scroll it too; one that fits does
  // not (a tab stop that does nothing). Again after a resize, and after the diagrams are drawn (mermaid-init.js).
  var SCROLLERS = "main pre, main math[display=block], main table, main .mermaid-diagram, main .graph-box";
  function focusScrollers() {
    document.querySelectorAll(SCROLLERS).forEach(function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1;
      if (wide && !box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
      else if (!wide && box.getAttribute("tabindex") === "0") box.removeAttribute("tabindex");
    });
  }
  window.notesPortalFocusScrollers = focusScrollers;

  // On a narrow screen the tree is a drawer (CSS alone opens it as #site-nav): the header's link becomes a
  // button that opens it without touching the address, puts the focus in it, and Escape or a click outside
  // closes it.
  function setupDrawer(nav) {
    var button = document.querySelector(".nav-toggle");
    var close = nav.querySelector(".nav-close");
    if (!button || !close) return;
    var root = document.documentElement;
    root.classList.add("has-drawer");
    button.setAttribute("role", "button");
    close.setAttribute("role", "button");
    close.addEventListener("click", function (event) { event.preventDefault(); set(false); button.focus(); });
    function set(open) {
      root.classList.add("drawer-moved");
      root.classList.toggle("nav-open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
      if (open) {
        var target = nav.querySelector("[aria-current=page]") || nav.querySelector(".nav-sources summary, .nav-sources a");
        if (target) target.focus();
      }
    }
    button.addEventListener("click", function (event) {
      event.preventDefault();
      set(!root.classList.contains("nav-open"));
    });
    button.addEventListener("keydown", function (event) {  // a button opens with the space bar too
      if (event.key === " ") { event.preventDefault(); set(!root.classList.contains("nav-open")); }
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && root.classList.contains("nav-open")) { set(false); button.focus(); }
    });
    document.addEventListener("click", function (event) {
      var outside = !nav.contains(event.target) && !button.contains(event.target);
      if (outside && root.classList.contains("nav-open")) set(false);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    focusScrollers();
    var resized = null;
    window.addEventListener("resize", function () { clearTimeout(resized); resized = setTimeout(focusScrollers, 200); });
    var nav = document.getElementById("site-nav");
    if (!nav) return;
    var here = {
      root: nav.getAttribute("data-root") || "",
      page: nav.getAttribute("data-page") || "",
      source: nav.getAttribute("data-source") || "",
      folder: nav.getAttribute("data-folder") || ""
    };
    var sources = nav.querySelectorAll("li.nav-source");
    here.only = sources.length === 1;  // one source: its tree is open on every page
    sources.forEach(function (item) { setupSource(item, here); });
    setupDrawer(nav);
  });
})();
