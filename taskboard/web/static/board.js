// The board's one script (taskboard.web): live updates and actions without reload.
// The pages work without it: every page is rendered on the server, every form posts.
//
// Live: /events says when anything under the board changed; the page is fetched again
// and each element marked data-live (and each idle form marked data-live-form) is
// swapped for its new self. A lost connection is said at the top; on its return the
// page catches up at once.
"use strict";

(function () {
  const body = document.body;
  const banner = document.getElementById("connection");
  const flash = document.getElementById("flash");
  let shown = body.dataset.generation;
  let fetching = false;
  let again = false;
  let lost = false;

  function say(message, ok) {
    flash.textContent = message;
    flash.hidden = false;
    flash.classList.toggle("refused", !ok);
    flash.setAttribute("role", ok ? "status" : "alert");
  }

  function dirty(root) {
    // a field someone is typing in: never swapped from under them
    for (const field of root.querySelectorAll("input, textarea, select")) {
      if (field.type === "hidden") continue;
      if (field.type === "checkbox" || field.type === "radio") {
        if (field.checked !== field.defaultChecked) return true;
      } else if (field.tagName === "SELECT") {
        for (const option of field.options) if (option.selected !== option.defaultSelected) return true;
      } else if (field.value !== field.defaultValue) {
        return true;
      }
    }
    return false;
  }

  function swap(fresh) {
    const focused = document.activeElement && document.activeElement.id;
    const open = new Set(Array.from(document.querySelectorAll("details[open]")).map((d) => d.id));
    for (const old of document.querySelectorAll("[data-live], [data-live-form]")) {
      const next = old.id && fresh.getElementById(old.id);
      if (!next) continue;
      if (old.hasAttribute("data-live-form") && (dirty(old) || old.contains(document.activeElement))) continue;
      if (dirty(old)) continue;
      old.replaceWith(document.adoptNode(next));
    }
    for (const id of open) {
      const details = document.getElementById(id);
      if (details) details.open = true;
    }
    if (focused && document.activeElement === body) {
      const target = document.getElementById(focused);
      if (target) target.focus();
    }
    const secret = fresh.querySelector("input[name=_secret]");
    if (secret) {
      // a restarted server has a new secret: every form, the idle ones included, carries it
      for (const input of document.querySelectorAll("input[name=_secret]")) input.value = secret.value;
    }
    const title = fresh.querySelector("title");
    if (title) document.title = title.textContent;
    // who the server took the page user to be (the name is the browser's: another tab may
    // have changed it); the form at the top says so too, swapped above unless being typed in
    if (fresh.body.dataset.user !== undefined) body.dataset.user = fresh.body.dataset.user;
    wire(document);
  }

  async function refresh() {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      const answer = await fetch(location.href, { headers: { "X-Tasks-Live": "1" }, cache: "no-store" });
      const text = await answer.text();
      const fresh = new DOMParser().parseFromString(text, "text/html");
      shown = fresh.body.dataset.generation;
      swap(fresh);
    } catch (error) {
      again = true; // the feed says when the server is back
    } finally {
      fetching = false;
      if (again) {
        again = false;
        setTimeout(refresh, 50);
      }
    }
  }

  function listen() {
    if (!window.EventSource) return;
    const feed = new EventSource("/events");
    feed.addEventListener("hello", (event) => {
      if (lost || event.data !== shown) refresh();
      if (lost) {
        lost = false;
        banner.hidden = true;
        banner.textContent = "";
      }
    });
    feed.addEventListener("change", (event) => {
      if (event.data !== shown) refresh();
    });
    feed.addEventListener("error", () => {
      lost = true;
      banner.textContent = "connection to the board lost: reconnecting… (what you see may be out of date)";
      banner.hidden = false;
    });
  }

  function askName() {
    const field = document.getElementById("who-name");
    say("Tell the board who you are first: your name, at the top of the page (changes are journaled with it).", false);
    if (field) field.focus();
  }

  async function send(form, event) {
    event.preventDefault();
    if (!body.dataset.user) {
      askName();
      return;
    }
    const buttons = form.querySelectorAll("button");
    buttons.forEach((button) => (button.disabled = true));
    try {
      const answer = await fetch(form.action, {
        method: "POST",
        headers: { Accept: "application/json" },
        body: new URLSearchParams(new FormData(form)),
      });
      let reply;
      try {
        reply = await answer.json();
      } catch (error) {
        reply = { ok: false, error: { message: (await answer.text()) || "the server answered " + answer.status } };
      }
      if (reply.ok) {
        say(reply.message, true);
        form.reset();
        const box = form.closest("details");
        if (box && form.id === "create-form") box.open = false;
      } else {
        say(reply.error.message, false);
      }
      refresh();
    } catch (error) {
      say("the server could not be reached; nothing was sent", false);
    } finally {
      buttons.forEach((button) => (button.disabled = false));
    }
  }

  async function sendName(form, event) {
    event.preventDefault();
    const answer = await fetch(form.action, {
      method: "POST",
      headers: { Accept: "application/json" },
      body: new URLSearchParams(new FormData(form)),
    });
    if (answer.ok) {
      const reply = await answer.json();
      body.dataset.user = reply.name;
      const field = form.querySelector("input[name=name]");
      field.defaultValue = reply.name;
      form.querySelector("label").textContent = "you are";
      form.querySelector("button").textContent = "Change";
      say("You are " + reply.name + ": changes you make are journaled with this name.", true);
      refresh(); // what the page offers depends on who you are (a task reserved for you, or for another)
    } else {
      say(await answer.text(), false);
    }
  }

  function wire(root) {
    for (const form of root.querySelectorAll("form.act")) {
      if (form.dataset.wired) continue;
      form.dataset.wired = "1";
      form.addEventListener("submit", (event) => send(form, event));
    }
    const who = root.getElementById && root.getElementById("who");
    if (who && !who.dataset.wired) {
      who.dataset.wired = "1";
      who.addEventListener("submit", (event) => sendName(who, event));
    }
  }

  wire(document);
  listen();
})();
