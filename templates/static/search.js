/* notes-portal search box. For now it only explains, when the site is opened from a file,
   that search needs the server; the search server (a later issue) answers GET /search?q=
   and GET /api/search (the form's data-api attribute). No inline scripts: CSP-friendly. */
(function () {
  "use strict";
  if (window.location.protocol !== "file:") {
    return;
  }
  function showNote() {
    document.querySelectorAll(".search-offline").forEach(function (el) {
      el.hidden = false;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.search").forEach(function (form) {
      form.classList.add("offline");
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        showNote();
      });
    });
    if (document.body.classList.contains("kind-search")) {
      showNote();
    }
  });
})();
