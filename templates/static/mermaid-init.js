// Draws each <pre class="mermaid"> of a note page (its source, escaped: see builder/render/diagrams.py) as an SVG
// with the bundled mermaid (static/vendor/mermaid/, loaded before this file; both only on pages with a diagram).
// A diagram mermaid cannot read keeps its source, marked. No eval, no inline script: the server's CSP forbids them.
(function () {
  "use strict";
  var blocks = Array.prototype.slice.call(document.querySelectorAll("pre.mermaid"));
  if (!blocks.length || !window.mermaid) {
    return;
  }
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  // securityLevel "strict": labels are sanitized and diagrams cannot bind click handlers to scripts;
  // suppressErrorRendering: a diagram mermaid cannot read draws no "syntax error" picture (its source stays).
  window.mermaid.initialize({
    startOnLoad: false, securityLevel: "strict", suppressErrorRendering: true, theme: dark ? "dark" : "default"
  });

  function draw(index) {
    if (index >= blocks.length) {
      if (window.notesPortalFocusScrollers) window.notesPortalFocusScrollers();  // a drawn diagram may be wide
      return;
    }
    var pre = blocks[index];
    var id = "mermaid-diagram-" + index;
    var next = function () { draw(index + 1); };  // one at a time: mermaid measures text in the page
    window.mermaid.render(id, pre.textContent).then(function (result) {
      var figure = document.createElement("div");
      figure.className = "mermaid-diagram";
      figure.innerHTML = result.svg;
      if (result.bindFunctions) {
        result.bindFunctions(figure);
      }
      pre.replaceWith(figure);
      next();
    }, function (error) {
      var scratch = document.getElementById("d" + id);  // where mermaid drew it, left behind by a failure
      if (scratch) {
        scratch.remove();
      }
      pre.classList.add("mermaid-error");
      pre.title = window.notesPortalSay("note.diagram_failed") + String((error && error.message) || error).slice(0, 500);
      next();
    });
  }

  draw(0);
})();
