/* cross-judge labelling page (inlined into every page of a label queue). Reads the queue
   from the JSON element #cj-queue, shows one item at a time, keeps the labels in
   localStorage under the queue's id and exports them as JSONL for --gold. The jury's
   answers stay hidden unless asked for, item by item (or on every item with
   data.showJury); each label records whether they had been shown on its item before it
   was given. Builds no markup from data: text goes in through textContent only. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("cj-queue").textContent);
  var items = data.items;
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.item"));
  var choices = Array.prototype.slice.call(document.querySelectorAll("button.choice"));
  var juryButton = document.getElementById("jury-button");
  var storeKey = "cross-judge:label-queue:" + data.queue;
  var reserved = Object.create(null);
  (data.reserved || []).forEach(function (label) { reserved[label.toUpperCase()] = true; });
  var labels = Object.create(null);
  var seen = Object.create(null);   // ids whose jury has been shown
  var shownAt = Object.create(null); // ids whose label was given after the jury was shown
  var open = Object.create(null);   // ids whose jury is shown now (default: data.showJury)
  var history = [];
  var current = 0;
  var storage = null;

  try {
    storage = window.localStorage;
    storage.getItem(storeKey);
  } catch (err) {
    storage = null;
  }

  function restore() {
    if (!storage) return;
    var known = Object.create(null);
    items.forEach(function (item) { known[item.id] = true; });
    try {
      var saved = JSON.parse(storage.getItem(storeKey) || "{}");
      var given = saved.labels || {};
      var at = saved.shownAt;
      var was = saved.seen || {};
      Object.keys(given).forEach(function (id) {
        if (!known[id] || typeof given[id] !== "string") return;
        labels[id] = given[id];
        // Labels kept by an older page, which showed the jury unless it was hidden.
        shownAt[id] = at ? at[id] === true : saved.hideJury !== true;
      });
      Object.keys(was).forEach(function (id) { if (known[id] && was[id] === true) seen[id] = true; });
    } catch (err) {
      /* unreadable: start afresh */
    }
  }

  function save() {
    if (!storage) return;
    try {
      storage.setItem(storeKey, JSON.stringify({ labels: labels, shownAt: shownAt, seen: seen }));
    } catch (err) {
      document.getElementById("storage-note").hidden = false;
    }
  }

  function labelledCount() {
    return items.filter(function (item) { return item.id in labels; }).length;
  }

  function juryOpen(id) {
    return id in open ? open[id] : data.showJury === true;
  }

  function render() {
    sections.forEach(function (section, index) {
      section.hidden = index !== current;
      var given = section.querySelector(".given");
      var id = items[index].id;
      given.textContent = id in labels ? labels[id] : "none yet";
      section.classList.toggle("labelled", id in labels);
      section.classList.toggle("jury-open", juryOpen(id));
    });
    var mine = undefined;
    if (items.length) {
      var id = items[current].id;
      mine = labels[id];
      if (juryOpen(id) && !seen[id]) {
        seen[id] = true;
        save();
      }
      juryButton.textContent = juryOpen(id) ? "Hide the jury (h)" : "Show the jury (h)";
      juryButton.setAttribute("aria-pressed", juryOpen(id) ? "true" : "false");
    }
    juryButton.disabled = !items.length;
    choices.forEach(function (button) {
      button.classList.toggle("chosen", button.getAttribute("data-label") === mine);
    });
    var done = labelledCount();
    document.getElementById("progress").textContent =
      done + " of " + items.length + " labelled";
    document.getElementById("export").disabled = done === 0;
    document.body.setAttribute("data-current", String(current));
  }

  function go(index) {
    if (!items.length) return;
    current = Math.max(0, Math.min(items.length - 1, index));
    render();
  }

  function setLabel(label) {
    if (!items.length || !label) return;
    var id = items[current].id;
    history.push([current, id in labels ? labels[id] : null, shownAt[id] === true]);
    labels[id] = label;
    shownAt[id] = seen[id] === true;
    save();
    go(current + 1);
  }

  function undo() {
    if (!items.length) return;
    var last = history.pop();
    var index = last ? last[0] : current;
    var id = items[index].id;
    if (last && last[1] !== null) {
      labels[id] = last[1];
      shownAt[id] = last[2];
    } else {
      delete labels[id];
      delete shownAt[id];
    }
    save();
    go(index);
  }

  function nextUnlabelled() {
    for (var step = 1; step <= items.length; step++) {
      var index = (current + step) % items.length;
      if (!(items[index].id in labels)) return go(index);
    }
  }

  function toggleJury() {
    if (!items.length) return;
    var id = items[current].id;
    open[id] = !juryOpen(id);
    render();
  }

  function toggleHelp(show) {
    var help = document.getElementById("help");
    help.hidden = show === undefined ? !help.hidden : !show;
  }

  function exportLabels() {
    var lines = items
      .filter(function (item) { return item.id in labels; })
      .map(function (item) {
        return JSON.stringify({
          id: item.id,
          label: labels[item.id],
          probability: item.probability,
          jury_shown: shownAt[item.id] === true
        });
      });
    if (!lines.length) return;
    var blob = new Blob([lines.join("\n") + "\n"], { type: "application/jsonl" });
    var url = URL.createObjectURL(blob);
    var link = document.createElement("a");
    link.href = url;
    link.download = data.export;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
  }

  choices.forEach(function (button) {
    button.addEventListener("click", function () { setLabel(button.getAttribute("data-label")); });
  });
  document.getElementById("other-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var field = document.getElementById("other");
    var note = document.getElementById("other-note");
    var value = field.value.trim();
    if (value && reserved[value.toUpperCase()]) {
      note.textContent = value + " marks a call that failed or was not made: type the item's label";
      note.hidden = false;
      return;
    }
    note.hidden = true;
    if (value) {
      field.value = "";
      field.blur();
      setLabel(value);
    }
  });
  document.getElementById("clear").addEventListener("click", undo);
  document.getElementById("export").addEventListener("click", exportLabels);
  document.getElementById("help-button").addEventListener("click", function () { toggleHelp(); });
  juryButton.addEventListener("click", toggleJury);

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && target.id === "other") {
      if (event.key === "Escape") { target.value = ""; target.blur(); }
      return;
    }
    var key = event.key;
    if (/^[1-9]$/.test(key)) {
      var n = Number(key);
      if (n <= data.shortcuts && n <= data.labels.length) setLabel(data.labels[n - 1]);
    } else if (key === "ArrowRight" || key === "j") {
      go(current + 1);
    } else if (key === "ArrowLeft" || key === "k") {
      go(current - 1);
    } else if (key === "n") {
      nextUnlabelled();
    } else if (key === "u") {
      undo();
    } else if (key === "h") {
      toggleJury();
    } else if (key === "o") {
      document.getElementById("other").focus();
    } else if (key === "?") {
      toggleHelp();
    } else if (key === "Escape") {
      toggleHelp(false);
    } else {
      return;
    }
    event.preventDefault();
  });

  restore();
  if (!storage) document.getElementById("storage-note").hidden = false;
  var firstOpen = items.findIndex(function (item) { return !(item.id in labels); });
  go(firstOpen < 0 ? 0 : firstOpen);
  render();
  document.body.setAttribute("data-ready", "true");
})();
