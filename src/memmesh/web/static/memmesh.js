// memmesh's local page: the little it needs beyond HTML. No inline script runs (the page's
// Content-Security-Policy forbids it); each behaviour hangs on a data- attribute.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // A checkbox with data-select-all="NAME" ticks or clears every checkbox named NAME.
  for (const all of document.querySelectorAll("input[data-select-all]")) {
    all.addEventListener("change", () => {
      const name = all.getAttribute("data-select-all");
      for (const box of document.querySelectorAll(`input[type=checkbox][name="${name}"]`)) {
        box.checked = all.checked;
      }
    });
  }
  // A form with data-confirm="QUESTION" asks before it is sent.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
    });
  }
});
