// The dashboard's one script: live pages refresh themselves when their runs change.
//
// A page whose content can still change marks that part `data-live` and names
// its stream in `data-stream` (/ui/live, authenticated by the session cookie).
// On each `changed` frame the page fetches itself again and swaps in the fresh,
// server-rendered part; on `ended` it does so once more and stops. Without this
// script the pages work as they are (and active ones reload every few seconds).
"use strict";

(function () {
  const MIN_GAP_MS = 400;
  let stream = null;
  let streamUrl = null;
  let inFlight = false;
  let again = false;
  let lastRefresh = 0;

  function region() {
    return document.querySelector("[data-live]");
  }

  // The runs a stream follows, without the sequences it starts from: a refreshed page
  // names newer sequences, and the stream already open has passed them.
  function followedRuns(url) {
    return url ? url.replace(/%3A-?[0-9]+/g, "") : null;
  }

  function follow() {
    const live = region();
    const wanted = live ? live.dataset.stream || null : null;
    if (followedRuns(wanted) === followedRuns(streamUrl)) {
      return;
    }
    if (stream) {
      stream.close();
      stream = null;
    }
    streamUrl = wanted;
    if (!wanted) {
      return;
    }
    stream = new EventSource(wanted);
    stream.addEventListener("changed", schedule);
    stream.addEventListener("ended", function () {
      stream.close();
      stream = null;
      streamUrl = null;
      schedule();
    });
  }

  function schedule() {
    if (inFlight) {
      again = true;
      return;
    }
    const wait = Math.max(0, lastRefresh + MIN_GAP_MS - Date.now());
    inFlight = true;
    window.setTimeout(refresh, wait);
  }

  async function refresh() {
    lastRefresh = Date.now();
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        cache: "no-store",
        headers: { "Accept": "text/html" },
      });
      if (response.ok) {
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.querySelector("[data-live]");
        const live = region();
        if (fresh && live) {
          live.replaceWith(document.adoptNode(fresh));
          document.title = page.title;
        }
      }
    } finally {
      inFlight = false;
      follow();
      if (again) {
        again = false;
        schedule();
      }
    }
  }

  document.addEventListener("DOMContentLoaded", follow);
})();
