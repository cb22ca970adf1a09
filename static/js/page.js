// Every page: keep what the server just said in view.
// - An element marked data-scroll-into-view (a failed upload's errors, far below the fold on a long page) is scrolled
//   to and focused, so that a screen reader reads it too.
// - After a form that redirects to an anchor (an adjudication saved at #item-...), the page's messages would sit at
//   the top, scrolled away: they are moved into the anchored element, where the reader is.
// - Below 600 px the navigation is a menu: the Menu button opens and closes it, and Escape closes it.
"use strict";

document.documentElement.classList.add("js");

function foldNavigation() {
  const toggle = document.querySelector(".nav-toggle");
  const bar = toggle && toggle.closest(".topbar");
  if (!bar) return;
  const show = (open) => {
    bar.classList.toggle("nav-open", open);
    toggle.setAttribute("aria-expanded", String(open));
  };
  toggle.addEventListener("click", () => show(!bar.classList.contains("nav-open")));
  bar.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && bar.classList.contains("nav-open")) {
      show(false);
      toggle.focus();
    }
  });
}

function showServerMessages() {
  const alert = document.querySelector("[data-scroll-into-view]");
  if (alert) {
    if (!alert.hasAttribute("tabindex")) alert.setAttribute("tabindex", "-1");
    alert.scrollIntoView({ block: "center" });
    alert.focus({ preventScroll: true });
    return;
  }
  const messages = document.querySelector("main > .messages");
  let target = null;
  try {
    target = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  } catch {
    target = null;
  }
  if (messages && target && !target.contains(messages)) {
    messages.classList.add("messages-here");
    target.prepend(messages);
    target.scrollIntoView({ block: "start" });
  }
}

function onReady() {
  foldNavigation();
  showServerMessages();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", onReady);
else onReady();
// The browser's own jump to the address's #anchor comes after the document is parsed and can carry the reader away
// from the alert again (a phone's long form): once everything has loaded, bring the alert back.
window.addEventListener("load", () => setTimeout(() => {
  const alert = document.querySelector("[data-scroll-into-view]");
  if (alert) alert.scrollIntoView({ block: "center" });
}, 0));
