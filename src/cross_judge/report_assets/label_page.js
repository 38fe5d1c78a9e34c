/* cross-judge labelling page (inlined into every page of a label queue). Reads the queue
   from the JSON element #cj-queue, shows one item at a time, keeps the labels in
   localStorage under the queue's id and exports them as JSONL for --gold. Builds no
   markup from data: text goes in through textContent only. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("cj-queue").textContent);
  var items = data.items;
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.item"));
  var choices = Array.prototype.slice.call(document.querySelectorAll("button.choice"));
  var storeKey = "cross-judge:label-queue:" + data.queue;
  var labels = Object.create(null);
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
    if (!storage) return false;
    var known = Object.create(null);
    items.forEach(function (item) { known[item.id] = true; });
    try {
      var saved = JSON.parse(storage.getItem(storeKey) || "{}");
      var given = saved.labels || {};
      Object.keys(given).forEach(function (id) {
        if (known[id] && typeof given[id] === "string") labels[id] = given[id];
      });
      return saved.hideJury === true;
    } catch (err) {
      return false;
    }
  }

  function save() {
    if (!storage) return;
    try {
      storage.setItem(storeKey, JSON.stringify({
        labels: labels,
        hideJury: document.body.classList.contains("blind")
      }));
    } catch (err) {
      document.getElementById("storage-note").hidden = false;
    }
  }

  function labelledCount() {
    return items.filter(function (item) { return item.id in labels; }).length;
  }

  function render() {
    sections.forEach(function (section, index) {
      section.hidden = index !== current;
      var given = section.querySelector(".given");
      var id = items[index].id;
      given.textContent = id in labels ? labels[id] : "none yet";
      section.classList.toggle("labelled", id in labels);
    });
    var mine = items.length ? labels[items[current].id] : undefined;
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
    history.push([current, id in labels ? labels[id] : null]);
    labels[id] = label;
    save();
    go(current + 1);
    render();
  }

  function undo() {
    if (!items.length) return;
    var last = history.pop();
    var index = last ? last[0] : current;
    var id = items[index].id;
    if (last && last[1] !== null) labels[id] = last[1];
    else delete labels[id];
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
    var box = document.getElementById("hide-jury");
    box.checked = !document.body.classList.contains("blind");
    document.body.classList.toggle("blind", box.checked);
    save();
  }

  function toggleHelp(show) {
    var help = document.getElementById("help");
    help.hidden = show === undefined ? !help.hidden : !show;
  }

  function exportLabels() {
    var lines = items
      .filter(function (item) { return item.id in labels; })
      .map(function (item) {
        return JSON.stringify({ id: item.id, label: labels[item.id], probability: item.probability });
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
    var value = field.value.trim();
    if (value) {
      field.value = "";
      field.blur();
      setLabel(value);
    }
  });
  document.getElementById("clear").addEventListener("click", undo);
  document.getElementById("export").addEventListener("click", exportLabels);
  document.getElementById("help-button").addEventListener("click", function () { toggleHelp(); });
  document.getElementById("hide-jury").addEventListener("change", function (event) {
    document.body.classList.toggle("blind", event.target.checked);
    save();
  });

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

  var blind = restore();
  document.getElementById("hide-jury").checked = blind;
  document.body.classList.toggle("blind", blind);
  if (!storage) document.getElementById("storage-note").hidden = false;
  var firstOpen = items.findIndex(function (item) { return !(item.id in labels); });
  go(firstOpen < 0 ? 0 : firstOpen);
  render();
  document.body.setAttribute("data-ready", "true");
})();
