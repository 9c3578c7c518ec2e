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
