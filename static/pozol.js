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

// <button data-copy="ID">: copy the value (or text) of element #ID to the clipboard,
// and say so on the button. Where the clipboard API is refused (plain HTTP from
// another machine), the text is selected for Ctrl-C instead.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  const source = button && document.getElementById(button.dataset.copy);
  if (!source) {
    return;
  }
  const text = "value" in source ? source.value : source.textContent;
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    if (source.select) {
      source.select();
    }
    button.textContent = "Press Ctrl-C";
  }
  setTimeout(() => { button.textContent = label; }, 2000);
});

// ---- Boxes that scroll inside the page: wide tables on narrow screens (see
// pozol.css), a .scroll box whose table is wider than a desktop page, and long logs. A box that scrolls must be reachable by keyboard to be
// scrolled without a mouse: give each one that overflows a tab stop, and take it
// back when it fits.
function markScrollingTables() {
  for (const box of document.querySelectorAll("div.scroll, table.grid, pre.log")) {
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

// ---- Following an operation's log (templates/ops/detail.html) -------------------
// <input type="checkbox" data-follow-log="ID">: while ticked, the scrollable element
// #ID stays scrolled to its newest line as htmx appends lines to it. Scrolling up by
// hand unticks it (the reader wants to stay where they are); ticking it again jumps
// back to the newest line.
(() => {
  const SLACK = 8; // px from the bottom that still count as "at the bottom"
  const toggles = () => document.querySelectorAll("input[data-follow-log]");
  const logOf = (toggle) => document.getElementById(toggle.dataset.followLog);
  const atBottom = (log) => log.scrollHeight - log.scrollTop - log.clientHeight <= SLACK;

  function follow(toggle) {
    const log = logOf(toggle);
    if (log && toggle.checked) {
      log.scrollTop = log.scrollHeight;
    }
  }
  const followAll = () => toggles().forEach(follow);

  document.addEventListener("DOMContentLoaded", followAll);
  document.addEventListener("htmx:afterSettle", followAll);
  document.addEventListener("htmx:oobAfterSwap", followAll);
  document.addEventListener("change", (event) => {
    if (event.target.matches("input[data-follow-log]")) {
      follow(event.target);
    }
  });
  // Scroll events do not bubble: listen in the capture phase. Following scrolls to
  // the bottom itself, so only a scroll that leaves the bottom is the reader's.
  document.addEventListener("scroll", (event) => {
    toggles().forEach((toggle) => {
      const log = logOf(toggle);
      if (toggle.checked && log === event.target && !atBottom(log)) {
        toggle.checked = false;
      }
    });
  }, true);
})();

// ---- Sortable tables (the host page's Snapshots tab): a table[data-sortable]
// whose header buttons (data-sort-column) sort its rows by each cell's
// data-sort-value, numbers as numbers; a second click reverses. The server
// sends them newest first, so the page works without this too.
(() => {
  function sortBy(button) {
    const table = button.closest("table[data-sortable]");
    const column = Number(button.dataset.sortColumn);
    const header = button.closest("th");
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    const value = (row) => {
      const cell = row.cells[column];
      return cell ? (cell.dataset.sortValue ?? cell.textContent) : "";
    };
    const compare = (a, b) => {
      const x = value(a), y = value(b);
      const numeric = x !== "" && y !== "" && !isNaN(x) && !isNaN(y);
      const order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return ascending ? order : -order;
    };
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).filter((row) => !row.querySelector("td.empty"));
    rows.sort(compare).forEach((row) => body.appendChild(row));
    table.querySelectorAll("th[aria-sort]").forEach((th) => th.removeAttribute("aria-sort"));
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("table[data-sortable] button[data-sort-column]");
    if (button) {
      sortBy(button);
    }
  });
})();

// ---- Polling that rests while the tab is hidden: an element with data-poll-visible
// (htmx `every Ns`) sends nothing while the page is not shown, and asks once as soon
// as it is shown again. data-poll-here polls the page's current address (the search
// and sort it pushed), not the one it was rendered with.
(() => {
  document.addEventListener("htmx:beforeRequest", (event) => {
    if (document.hidden && event.detail.elt.closest("[data-poll-visible]")) {
      event.preventDefault();
    }
  });
  document.addEventListener("htmx:configRequest", (event) => {
    if (event.detail.elt.hasAttribute("data-poll-here")) {
      event.detail.path = window.location.pathname + window.location.search;
    }
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && window.htmx) {
      document.querySelectorAll("[data-poll-visible]").forEach(
        (element) => window.htmx.trigger(element, "pozol:shown"));
    }
  });
})();
