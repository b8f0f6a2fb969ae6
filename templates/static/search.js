// notes-portal search: search-as-you-type over /api/search (results grouped by note), keyboard
// navigation, Ctrl/Cmd-K or / to reach the box from anywhere, and highlighting of the query's words
// in the section a result lands on; where the portal has an answer provider (the form's data-ask),
// "Ask": an answer from the notes whose every citation the server has checked (see askInto).
// No framework, no inline script (the server's CSP forbids it), works without it too:
// the form submits to the server-rendered /search page.
(function () {
  "use strict";

  var DEBOUNCE_MS = 150;

  // The page's words (nav.js reads them: builder/core/messages.py).
  function say(key, values) { return window.notesPortalSay(key, values); }

  function fold(text) {
    return text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }

  function words(query) {
    var out = [];
    (query.match(/[\p{L}\p{N}]+/gu) || []).forEach(function (w) {
      w = fold(w);
      if (out.indexOf(w) < 0) out.push(w);
    });
    return out;
  }

  function matches(word, terms) {
    var w = fold(word);
    return terms.some(function (t) { return t.length >= 3 ? w.indexOf(t) === 0 : w === t; });
  }

  function capital(text) { return text.charAt(0).toUpperCase() + text.slice(1); }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text != null) node.textContent = text;
    return node;
  }

  // The snippet comes from the server HTML-escaped with <mark> around matches; rebuild it
  // as DOM nodes instead of trusting innerHTML.
  function snippetNodes(snippet) {
    var container = el("p", "hit-snippet");
    var parts = snippet.split(/(<mark>|<\/mark>)/);
    var marked = false;
    var decoder = document.createElement("textarea");
    parts.forEach(function (part) {
      if (part === "<mark>") { marked = true; return; }
      if (part === "</mark>") { marked = false; return; }
      decoder.innerHTML = part;
      var text = document.createTextNode(decoder.value);
      if (marked) { var m = el("mark"); m.appendChild(text); container.appendChild(m); }
      else container.appendChild(text);
    });
    return container;
  }

  // ``words``: what the page marks (words that begin with one of them), space-separated.
  function hitHref(root, hit, words) {
    var parts = hit.url.split("#");
    return root + parts[0] + "?hl=" + encodeURIComponent(words) + (parts[1] ? "#" + parts[1] : "");
  }

  // The query's words as searched, and the forms the hits' sections hold (``převodník`` for
  // ``prevodniku``: the same word, which the server matched by its key, not by its beginning).
  // Each word once: a long query's link stays short, as the search page's links (``pages.landing``).
  function landingWords(marked, hits) {
    var all = [marked];
    hits.forEach(function (hit) { if (hit.words && hit.words.length) all.push(hit.words.join(" ")); });
    var seen = Object.create(null), out = [];
    all.join(" ").split(/\s+/).forEach(function (word) {
      if (word && !seen[word]) { seen[word] = true; out.push(word); }
    });
    return out.join(" ");
  }

  // ---------------------------------------------------------------- Ask (only where data-ask is set)

  // As server/answer.py's STATUS_TEXT says them, in the page's language.
  var ASKED = { not_in_notes: "ask.not_in_notes", refused: "ask.refused", unavailable: "ask.unavailable",
    busy: "ask.busy" };

  function askNotice(form) {
    return el("p", "ask-notice", form.getAttribute("data-ask-notice"));
  }

  // The answer's text with each [n] (or [1, 2]) a link to its passage's section, to the span the check
  // matched (a text fragment the browser marks); the model's text is never HTML and never a link of its own:
  // the links come from the sources. Hovering or focusing an [n] marks that sentence's evidence below.
  function answerText(data, root) {
    var p = el("p", "answer-text"), byMark = {}, count = 0;
    data.citations.forEach(function (c) { c.marks.forEach(function (k) { byMark[k] = c; }); });
    data.answer.split(/(\[\d+(?:\s*[,;]\s*\d+)*\])/).forEach(function (part) {
      var m = /^\[([\d,;\s]+)\]$/.exec(part);
      if (!m) { p.appendChild(document.createTextNode(part)); return; }
      m[1].split(/\s*[,;]\s*/).forEach(function (n) {
        var c = byMark[count++], source = data.sources[Number(n) - 1];
        var a = el("a", "cite", "[" + n + "]");
        a.href = root + (c ? c.link : source.url);
        a.title = source.heading;
        if (c) {
          var id = "evidence-" + c.sentence + "-" + c.n;
          a.setAttribute("aria-describedby", id);
          a.setAttribute("data-evidence", id);
        }
        p.appendChild(a);
      });
    });
    return p;
  }

  // Mark the evidence an [n] stands for while it is hovered or focused.
  function markEvidence(box) {
    function toggle(event, on) {
      var a = event.target.closest && event.target.closest("a.cite[data-evidence]");
      var found = a && document.getElementById(a.getAttribute("data-evidence"));
      if (found) found.classList.toggle("marked", on);
    }
    box.addEventListener("mouseover", function (e) { toggle(e, true); });
    box.addEventListener("mouseout", function (e) { toggle(e, false); });
    box.addEventListener("focusin", function (e) { toggle(e, true); });
    box.addEventListener("focusout", function (e) { toggle(e, false); });
  }

  function showAnswer(box, data, root) {
    box.textContent = "";
    box.className = "answer answer-" + data.status;
    if (data.status !== "answered") {
      box.appendChild(el("p", "answer-status", ASKED[data.status] ? say(ASKED[data.status]) : data.status));
      if (data.problems.length) {
        var list = el("ul", "answer-problems");
        data.problems.forEach(function (problem) { list.appendChild(el("li", null, problem.message)); });
        box.appendChild(list);
      }
      return;
    }
    box.appendChild(answerText(data, root));
    var sources = el("ol", "answer-sources");
    data.sources.forEach(function (s) {
      var own = data.citations.filter(function (c) { return c.n === s.n; });
      if (!own.length) return;
      var item = el("li");
      item.value = s.n;
      var a = el("a", "answer-source", s.heading.split(" > ").join(" › "));
      a.href = root + s.url;
      item.appendChild(a);
      own.forEach(function (c) {
        var quote = el("blockquote", "answer-evidence");
        quote.id = "evidence-" + c.sentence + "-" + c.n;
        quote.appendChild(el("span", "answer-evidence-label", say("ask.sentence", { n: String(c.sentence) })));
        quote.appendChild(document.createTextNode(" " + s.text.slice(c.span[0], c.span[1]).split(/\s+/).join(" ")));
        item.appendChild(quote);
      });
      sources.appendChild(item);
    });
    box.appendChild(sources);
  }

  // Ask ``query`` and show the checked answer (or why there is none) in ``box``.
  function askInto(box, form, query, root) {
    box.hidden = false;
    box.className = "answer answer-pending";
    box.textContent = "";
    box.appendChild(el("p", "answer-status", say("ask.pending")));
    fetch(form.getAttribute("data-ask") + "?q=" + encodeURIComponent(query))
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok && !ASKED[body.status]) throw new Error(body.error || ("HTTP " + r.status));
          return body;
        });
      })
      .then(function (data) { showAnswer(box, data, root); })
      .catch(function (err) {
        box.className = "answer answer-failed";
        box.textContent = "";
        box.appendChild(el("p", "answer-status", say("ask.failed") + err.message));
      });
  }

  // The search page's form: its Ask button (which, without JavaScript, asks the server for the page with
  // the answer) shows the answer under the notice instead, where the server puts it.
  function setupAskButton(form, root) {
    var button = form.querySelector("button.ask-button");
    if (!button) return;
    var box = document.querySelector("main .answer");
    if (!box) {
      box = el("div", "answer");
      box.hidden = true;
      box.setAttribute("aria-live", "polite");
      var notice = document.querySelector("main .ask-notice");
      notice.parentNode.insertBefore(box, notice.nextSibling);
    }
    markEvidence(box);
    button.addEventListener("click", function (event) {
      var query = form.querySelector("input[name=q]").value.trim();
      event.preventDefault();
      if (query) askInto(box, form, query, root);
    });
  }

  function setupBox(form) {
    var input = form.querySelector("input[name=q]");
    var api = form.getAttribute("data-api");
    var root = api.replace(/api\/search$/, "");
    // The drop-down: what the search says about itself, then a listbox of the hits (each note a group of
    // options) and the links to all results and to the words as typed (options too: the arrow keys walk them).
    var panel = el("div", "search-results");
    panel.hidden = true;
    form.appendChild(panel);
    var timer = null, controller = null, selected = -1, lastQuery = "";
    var large = form.classList.contains("search-large");
    var asking = form.hasAttribute("data-ask");
    if (asking && large) setupAskButton(form, root);

    // Every link of the panel in its order (the arrow keys walk them); Enter alone takes the first hit.
    function items() { return panel.querySelectorAll("a[role=option]"); }

    function select(index) {
      var list = items();
      if (!list.length) { selected = -1; return; }
      selected = (index + list.length) % list.length;
      list.forEach(function (a, i) { a.setAttribute("aria-selected", i === selected ? "true" : "false"); });
      list[selected].scrollIntoView({ block: "nearest" });
    }

    function close() { panel.hidden = true; selected = -1; }

    // One option: a matching section of a note, with the words that say which half found it
    // (the first of a note's sections carries the note's title).
    // ``where``: the note's place too, when another note among the hits has the same title.
    function sectionLink(hit, marked, first, where) {
      var a = el("a", "search-result");
      a.href = hitHref(root, hit, landingWords(marked, [hit]));
      a.setAttribute("role", "option");
      if (first) a.appendChild(el("span", "hit-title", hit.title));
      if (first && where) a.appendChild(el("span", "hit-where", hit.source + ": " + hit.path));
      var head = el("span", "hit-head");
      head.appendChild(el("span", "hit-breadcrumb", section(hit)));
      if (hit.ranks.bm25) head.appendChild(el("span", "badge badge-words", say("search.by_words", { n: String(hit.ranks.bm25) })));
      if (hit.ranks.vector) head.appendChild(el("span", "badge badge-meaning", say("search.by_meaning", { n: String(hit.ranks.vector) })));
      a.appendChild(head);
      a.appendChild(snippetNodes(hit.snippet));
      return a;
    }

    // Where in the note a hit is: its breadcrumb without the note's title (shown above it).
    function section(hit) {
      var prefix = hit.title + " > ";
      if (hit.breadcrumb === hit.title) return say("search.top");
      return hit.breadcrumb.indexOf(prefix) === 0 ? hit.breadcrumb.slice(prefix.length) : hit.breadcrumb;
    }

    // A note's title once, its matching sections under it, then its other sections and the
    // copies of the same text elsewhere as plain links; ``marked``: the words their pages mark.
    function noteGroup(hits, marked, where) {
      var group = el("div", "search-group");
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", hits[0].title);
      hits.forEach(function (hit, i) { group.appendChild(sectionLink(hit, marked, i === 0, where)); });
      var extra = [];
      hits.forEach(function (hit) {
        (hit.more || []).forEach(function (m) {
          var where = section({ title: hit.title, breadcrumb: m.breadcrumb });
          extra.push({ url: m.url, text: say("search.also") + where, cls: "search-more" });
        });
        (hit.copies || []).forEach(function (c) {
          extra.push({ url: c.url, text: say("search.same_text") + c.source + ": " + c.path, cls: "search-copy" });
        });
      });
      if (extra.length) {
        var list = el("ul", "hit-more");
        list.setAttribute("role", "none");  // the options belong to the note's group
        extra.forEach(function (x) {
          var item = el("li");
          item.setAttribute("role", "none");
          var a = el("a", "search-result " + x.cls, x.text);
          a.href = hitHref(root, x, landingWords(marked, hits));
          a.setAttribute("role", "option");
          item.appendChild(a);
          list.appendChild(item);
        });
        group.appendChild(list);
      }
      return group;
    }

    // Hits of one note together, in the order of each note's best hit.
    function byNote(hits) {
      var groups = [], index = {};
      hits.forEach(function (hit) {
        var key = hit.url.split("#")[0];
        if (!(key in index)) { index[key] = groups.length; groups.push([]); }
        groups[index[key]].push(hit);
      });
      return groups;
    }

    // The drop-down's first option: ask the notes, with the notice of where the question goes.
    function askItem(query) {
      var block = el("div", "ask-block");
      block.setAttribute("role", "group");
      var a = el("a", "ask-action", say("ask.action", { query: query }));
      block.setAttribute("aria-label", a.textContent);
      a.href = "#";
      a.setAttribute("role", "option");
      var box = el("div", "answer");
      markEvidence(box);
      box.hidden = true;
      box.setAttribute("aria-live", "polite");
      a.addEventListener("click", function (event) {
        event.preventDefault();
        askInto(box, form, query, root);
      });
      block.appendChild(a);
      block.appendChild(askNotice(form));
      block.appendChild(box);
      return block;
    }

    function show(data, query) {
      panel.textContent = "";
      var options = el("div", "search-options");
      options.setAttribute("role", "listbox");
      options.setAttribute("aria-label", say("search.results"));
      if (asking && !large) options.appendChild(askItem(query));
      (data.said || []).forEach(function (note) { panel.appendChild(el("p", "search-note", say(note.key, note.values))); });
      if (!data.hits.length) panel.appendChild(el("p", "search-empty", say("search.nothing", { query: query })));
      else if (data.weak) panel.appendChild(el("p", "search-weak", capital(say("search.weak"))));
      panel.appendChild(options);
      if (data.corrected) {  // a correct word the notes lack may have been taken for a typo: the way back
        var typed = el("a", "search-as-typed", say("search.as_typed", { query: query }));
        typed.href = root + "search?q=" + encodeURIComponent(query) + "&correct=0";
        typed.setAttribute("role", "option");
        options.appendChild(typed);
      }
      // the landing page marks the words the snippets mark (as searched, without function words)
      var marked = data.marked && data.marked.length ? data.marked.join(" ") : query;
      var groups = byNote(data.hits), notesTitled = Object.create(null);
      groups.forEach(function (hits) { notesTitled[hits[0].title] = (notesTitled[hits[0].title] || 0) + 1; });
      groups.forEach(function (hits) { options.appendChild(noteGroup(hits, marked, notesTitled[hits[0].title] > 1)); });
      var all = el("a", "search-all", say("search.all", { query: query }));
      all.href = root + "search?q=" + encodeURIComponent(query);
      all.setAttribute("role", "option");
      options.appendChild(all);
      panel.hidden = false;
      selected = -1;
    }

    // The portal has an API key and this browser has not signed in: say so, with the way to do it.
    function showSignIn() {
      panel.textContent = "";
      var note = el("p", "search-note", say("search.needs_key"));
      var link = el("a", "search-sign-in", say("search.sign_in"));
      var here = window.location.pathname + window.location.search + window.location.hash;
      link.href = root + "auth?next=" + encodeURIComponent(here);
      note.appendChild(link);
      panel.appendChild(note);
      panel.hidden = false;
    }

    function run() {
      var query = input.value.trim();
      if (query === lastQuery && !panel.hidden) return;
      lastQuery = query;
      if (controller) controller.abort();
      if (!query) { close(); return; }
      controller = new AbortController();
      fetch(api + "?limit=8&q=" + encodeURIComponent(query), { signal: controller.signal })
        .then(function (r) {
          if (r.status === 401) return null;
          return r.json().then(function (body) {
            if (!r.ok && !ASKED[body.status]) throw new Error(body.error || ("HTTP " + r.status));
            return body;
          });
        })
        .then(function (data) {
          if (!data) showSignIn();
          else if (input.value.trim() === query) show(data, query);
        })
        .catch(function (err) {
          if (err.name === "AbortError") return;
          panel.textContent = "";
          panel.appendChild(el("p", "search-note", say("search.failed") + err.message));
          panel.hidden = false;
        });
    }

    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(run, DEBOUNCE_MS);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown") { event.preventDefault(); if (panel.hidden) run(); else select(selected + 1); }
      else if (event.key === "ArrowUp") { event.preventDefault(); select(selected < 0 ? -1 : selected - 1); }
      else if (event.key === "Escape") { close(); }
      else if (event.key === "Enter") {
        var target = selected >= 0 ? items()[selected] : (!panel.hidden ? panel.querySelector("a.search-result") : null);
        if (target && target.classList.contains("ask-action")) { event.preventDefault(); target.click(); }
        else if (target) { event.preventDefault(); window.location.href = target.href; }
      }
    });
    document.addEventListener("click", function (event) { if (!form.contains(event.target)) close(); });
  }

  // On a note page reached from a result: mark the query's words in the target section and scroll there.
  function highlightLanding() {
    var query = new URLSearchParams(window.location.search).get("hl");
    if (!query) return;
    var terms = words(query);
    if (!terms.length) return;
    var id = decodeURIComponent(window.location.hash.slice(1));
    var start = id ? document.getElementById(id) : document.querySelector("main h1");
    var article = document.querySelector("main .note-body") || document.querySelector("main");
    if (!article) return;
    var nodes = sectionNodes(start, article);
    var first = null;
    nodes.forEach(function (node) {
      var walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT, null);
      var texts = [];
      for (var t = walker.nextNode(); t; t = walker.nextNode()) texts.push(t);
      if (node.nodeType === Node.TEXT_NODE) texts.push(node);
      texts.forEach(function (text) {
        var mark = markWords(text, terms);
        if (mark && !first) first = mark;
      });
    });
    (start || first || article).scrollIntoView({ block: "start" });
    if (start) start.classList.add("search-target");
  }

  // The heading with the anchor and everything up to the next heading of the same or higher level.
  function sectionNodes(start, article) {
    if (!start) return [article];
    var level = /^H([1-6])$/.exec(start.tagName);
    var nodes = [start];
    for (var n = start.nextSibling; n; n = n.nextSibling) {
      var m = n.nodeType === Node.ELEMENT_NODE && /^H([1-6])$/.exec(n.tagName);
      if (m && level && Number(m[1]) <= Number(level[1])) break;
      nodes.push(n);
    }
    return nodes;
  }

  function markWords(textNode, terms) {
    var text = textNode.nodeValue, re = /[\p{L}\p{N}]+/gu, m, last = 0, found = null;
    var frag = document.createDocumentFragment();
    while ((m = re.exec(text))) {
      if (!matches(m[0], terms)) continue;
      frag.appendChild(document.createTextNode(text.slice(last, m.index)));
      var mark = el("mark", "search-hl", m[0]);
      frag.appendChild(mark);
      found = found || mark;
      last = m.index + m[0].length;
    }
    if (!found) return null;
    frag.appendChild(document.createTextNode(text.slice(last)));
    textNode.parentNode.replaceChild(frag, textNode);
    return found;
  }

  // Opened from a file: there is no server to ask. Say so as soon as someone types or submits.
  function setupOffline(form) {
    function explain(event) {
      if (event.type === "submit") event.preventDefault();
      document.querySelectorAll(".search-offline").forEach(function (p) { p.hidden = false; });
    }
    form.addEventListener("submit", explain);
    form.querySelector("input[name=q]").addEventListener("input", explain);
  }

  // Ctrl-K (Cmd-K on a Mac) anywhere, or / outside a text field, puts the cursor in the search box.
  function isShortcut(event) {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && (event.key === "k" || event.key === "K")) return true;
    var tag = (event.target.tagName || "").toLowerCase();
    return event.key === "/" && !event.ctrlKey && !event.metaKey && tag !== "input" && tag !== "textarea"
      && tag !== "select" && !event.target.isContentEditable;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var offline = window.location.protocol === "file:";
    document.querySelectorAll("form.search").forEach(function (form) {
      if (offline) setupOffline(form);
      else setupBox(form);
    });
    document.addEventListener("keydown", function (event) {
      if (!isShortcut(event)) return;
      var box = document.querySelector("form.search input[name=q]");
      if (box) { event.preventDefault(); box.focus(); box.select(); }
    });
    highlightLanding();
  });
})();
