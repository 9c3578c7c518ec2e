// PoZoL's only script of its own. Pages carry no inline scripts or on* handlers
// (the Content-Security-Policy forbids them); behaviour hangs off data- attributes.
"use strict";

// <form data-confirm="Question?">: ask before submitting. The question is read as
// text from the attribute, so a host or profile name in it is never code.
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});

// ---- Boxes that scroll inside the page: wide tables on narrow screens (see
// pozol.css) and long logs. A box that scrolls must be reachable by keyboard to be
// scrolled without a mouse: give each one that overflows a tab stop, and take it
// back when it fits.
function markScrollingTables() {
  for (const box of document.querySelectorAll("table.grid, pre.log")) {
    const overflows = box.scrollWidth > box.clientWidth + 1
      || box.scrollHeight > box.clientHeight + 1;
    if (overflows) {
      box.tabIndex = 0;
    } else if (box.getAttribute("tabindex") === "0") {
      box.removeAttribute("tabindex");
    }
  }
}
document.addEventListener("DOMContentLoaded", markScrollingTables);
document.addEventListener("htmx:afterSettle", markScrollingTables);
let resizeTimer;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(markScrollingTables, 150);
});
