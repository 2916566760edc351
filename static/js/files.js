// Files in the composer: the attach button, drag & drop onto the page and paste. Each file uploads as
// soon as it is chosen (XHR, so the chip shows the upload's progress) and becomes a chip with its name,
// size and a remove button; the sent message carries the uploaded files' ids (hidden `files` inputs).
// The composer is redrawn by the server (a turn starts or ends), so the chips live here, in `chips`,
// and are drawn again into whichever composer the page holds.
(function () {
  "use strict";

  var chips = [];  // {key, name, size, loaded, fileId, error, xhr, note}, or an MCP resource's {key, name, resource: {server, uri}}
  var nextKey = 1;
  var QUEUED = "Sends as soon as the files finish uploading.";

  function form() {
    return document.querySelector("form[data-upload-url]");
  }
  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (err) {
      return "";
    }
  }
  function humanSize(bytes) {
    if (bytes < 1024) return bytes + " B";
    var units = ["KB", "MB", "GB"];
    var value = bytes / 1024;
    for (var i = 0; i < units.length; i++) {
      if (value < 1024 || i === units.length - 1) return (value < 10 ? value.toFixed(1) : Math.round(value)) + " " + units[i];
      value /= 1024;
    }
  }
  function uploading() {
    return chips.some(function (chip) { return !chip.resource && !chip.fileId && !chip.error; });
  }
  function say(text) {
    var error = document.getElementById("composer-error");
    if (error) error.textContent = text;
  }

  // Draw the chips (and the hidden inputs of the uploaded ones) into the composer on the page.
  function draw() {
    var f = form();
    var list = f && f.querySelector(".file-chips");
    if (!list) return;
    list.textContent = "";
    chips.forEach(function (chip) {
      if (chip.resource) {
        list.appendChild(resourceChip(chip));
        return;
      }
      var item = document.createElement("li");
      item.className = "file-chip" + (chip.error ? " failed" : chip.fileId ? " done" : " uploading");
      item.dataset.key = String(chip.key);
      var name = document.createElement("span");
      name.className = "file-name";
      name.textContent = chip.name;
      name.title = chip.name;
      var size = document.createElement("span");
      size.className = "file-size muted";
      size.textContent = humanSize(chip.size);
      item.appendChild(name);
      item.appendChild(size);
      if (chip.note) {  // said plainly: a table with its column names and no rows
        var note = document.createElement("span");
        note.className = "file-note muted small";
        note.textContent = chip.note;
        item.appendChild(note);
      }
      if (!chip.fileId && !chip.error) {
        var bar = document.createElement("progress");
        bar.max = chip.size || 1;
        bar.value = chip.loaded;
        bar.setAttribute("aria-label", "Uploading " + chip.name);
        item.appendChild(bar);
      }
      if (chip.error) {
        var why = document.createElement("span");
        why.className = "file-error";
        why.setAttribute("role", "alert");
        why.textContent = chip.error;
        item.appendChild(why);
      }
      if (chip.fileId) {
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = "files";
        input.value = chip.fileId;
        item.appendChild(input);
      }
      item.appendChild(removeButton(chip));
      list.appendChild(item);
    });
    list.hidden = chips.length === 0;
  }
  // The × that takes a chip off the message (a click handler finds it by data-remove-file).
  function removeButton(chip) {
    var remove = document.createElement("button");
    remove.type = "button";
    remove.className = "file-remove";
    remove.dataset.removeFile = String(chip.key);
    remove.setAttribute("aria-label", "Remove " + chip.name);
    remove.title = "Remove";
    remove.textContent = "×";
    return remove;
  }
  // An MCP resource attached from the Tools panel: its name and server; the message carries it as a
  // hidden `resources` input ({"server", "uri"}), and the server reads it when the turn runs.
  function resourceChip(chip) {
    var item = document.createElement("li");
    item.className = "file-chip resource-chip done";
    item.dataset.key = String(chip.key);
    var name = document.createElement("span");
    name.className = "file-name";
    name.textContent = chip.name;
    name.title = chip.resource.uri;
    var server = document.createElement("span");
    server.className = "file-size muted";
    server.textContent = chip.resource.server;
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = "resources";
    input.value = JSON.stringify(chip.resource);
    [name, server, input, removeButton(chip)].forEach(function (node) { item.appendChild(node); });
    return item;
  }
  function attachResource(button) {
    var resource = {server: button.dataset.server, uri: button.dataset.attachResource};
    var known = chips.some(function (c) { return c.resource && c.resource.server === resource.server && c.resource.uri === resource.uri; });
    if (!known) chips.push({key: nextKey++, name: button.dataset.name || resource.uri, resource: resource});
    draw();
    var panel = button.closest("[popover]");
    if (panel && panel.hidePopover) panel.hidePopover();
    var box = document.getElementById("message");
    if (box) box.focus();
  }
  // Only the progress of one chip changes while it uploads: no redraw of the rest (nor of the focus).
  function showProgress(chip) {
    var f = form();
    var bar = f && f.querySelector('.file-chip[data-key="' + chip.key + '"] progress');
    if (bar) bar.value = chip.loaded;
  }

  function upload(file) {
    var f = form();
    if (!f) return;
    var chip = {key: nextKey++, name: file.name || "pasted file", size: file.size, loaded: 0, fileId: "", error: "", xhr: null};
    chips.push(chip);
    var max = Number(f.dataset.uploadMax || 0);
    if (max && file.size > max) {  // refused here, before a byte is sent (the server would refuse it too)
      chip.error = f.dataset.uploadTooLarge || "The file is larger than the upload limit.";
      draw();
      return;
    }
    var data = new FormData();
    data.append("file", file, chip.name);
    var xhr = new XMLHttpRequest();
    chip.xhr = xhr;
    xhr.open("POST", f.dataset.uploadUrl);
    xhr.setRequestHeader("X-CSRFToken", csrfToken());
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", function (e) {
      chip.loaded = e.loaded;
      showProgress(chip);
    });
    xhr.addEventListener("load", function () {
      chip.xhr = null;
      var body = null;
      try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
      if (xhr.status === 201 && body && body.fileId) {
        chip.fileId = body.fileId;
        chip.loaded = chip.size;
        var empty = (body.tables || []).filter(function (t) { return t.rows === 0; });
        if (empty.length) chip.note = (body.tables.length > 1 ? empty.length + " of its tables have " : "") + "0 rows: only the column names";
      } else {
        chip.error = (body && body.error && body.error.message) || "The upload failed (" + xhr.status + ").";
      }
      draw();
      sendIfQueued();
    });
    xhr.addEventListener("error", function () {
      chip.xhr = null;
      chip.error = "The upload failed: the server could not be reached.";
      draw();
      sendIfQueued();
    });
    xhr.send(data);
    draw();
  }
  function uploadAll(files) {
    for (var i = 0; i < files.length; i++) upload(files[i]);
  }

  // Removed before sending: an upload in flight is aborted, an uploaded file (still the uploader's and
  // in no session) is deleted.
  function removeChip(key) {
    var chip = chips.filter(function (c) { return c.key === key; })[0];
    if (!chip) return;
    chips = chips.filter(function (c) { return c !== chip; });
    if (chip.xhr) chip.xhr.abort();
    var f = form();
    if (chip.fileId && f && f.dataset.deleteUrl) {
      var xhr = new XMLHttpRequest();
      xhr.open("POST", f.dataset.deleteUrl.replace("FILE_ID", chip.fileId));
      xhr.setRequestHeader("X-CSRFToken", csrfToken());
      xhr.send();
    }
    draw();
    var attach = document.getElementById("attach-button");
    if (attach) attach.focus();
    if (queued) {  // what was queued changed: the user sends again when ready
      queued = false;
      say("");
    }
  }

  document.addEventListener("click", function (e) {
    var remove = e.target.closest && e.target.closest("[data-remove-file]");
    if (remove) {
      removeChip(Number(remove.dataset.removeFile));
      return;
    }
    var resource = e.target.closest && e.target.closest("[data-attach-resource]");
    if (resource) {
      attachResource(resource);
      return;
    }
    if (e.target.closest && e.target.closest("#attach-button")) {
      var input = document.getElementById("attach-input");
      if (input) input.click();
    }
  });
  document.addEventListener("change", function (e) {
    if (!e.target || e.target.id !== "attach-input") return;
    uploadAll(e.target.files);
    e.target.value = "";  // the same file may be chosen again
  });

  // Drag & drop anywhere on a page with a composer: the page says where the files go while they hover.
  var depth = 0;
  function carriesFiles(e) {
    var types = e.dataTransfer && e.dataTransfer.types;
    return !!types && Array.prototype.indexOf.call(types, "Files") >= 0;
  }
  document.addEventListener("dragenter", function (e) {
    if (!form() || !carriesFiles(e)) return;
    depth++;
    document.body.classList.add("dropping");
  });
  document.addEventListener("dragleave", function (e) {
    if (!form() || !carriesFiles(e)) return;
    depth = Math.max(0, depth - 1);
    if (!depth) document.body.classList.remove("dropping");
  });
  document.addEventListener("dragover", function (e) {
    if (!form() || !carriesFiles(e)) return;
    e.preventDefault();  // allows the drop
    e.dataTransfer.dropEffect = "copy";
  });
  document.addEventListener("drop", function (e) {
    depth = 0;
    document.body.classList.remove("dropping");
    if (!form() || !e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();  // the browser would open the file instead
    uploadAll(e.dataTransfer.files);
  });
  // Pasting a file (a screenshot, a file copied in the file manager) attaches it; pasted text is left alone.
  document.addEventListener("paste", function (e) {
    var files = e.clipboardData && e.clipboardData.files;
    if (!form() || !files || !files.length) return;
    e.preventDefault();
    uploadAll(files);
  });

  // Sending waits for the uploads (capturing, before htmx's own submit handler and the browser's):
  // the message is queued and goes by itself once the last upload has finished, unless one failed
  // (then it stays, with the reason) or the user removes a file meanwhile (then Send again).
  var queued = false;
  document.addEventListener("submit", function (e) {
    if (e.target !== form() || !uploading()) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    queued = true;
    say(QUEUED);
  }, true);
  function sendIfQueued() {
    if (!queued || uploading()) return;
    queued = false;
    var f = form();
    if (!f) return;
    if (chips.some(function (c) { return c.error; })) {
      say("Not sent: a file failed to upload (its reason is on its chip). Remove it, then send.");
      return;
    }
    say("");
    if (f.requestSubmit) f.requestSubmit(); else htmx.trigger(f, "submit");
  }
  // Sent: the uploaded files went with the message; those that failed stay to be removed. (Before the
  // answer is swapped in: it redraws the composer, and events of the old one no longer reach the page.)
  var sent = [];
  document.addEventListener("htmx:beforeRequest", function (e) {
    if (e.detail.elt && e.detail.elt.id === "composer") sent = chips.filter(function (c) { return c.fileId || c.resource; });
  });
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (!e.detail.elt || e.detail.elt.id !== "composer") return;
    if (e.detail.xhr.status < 300) chips = chips.filter(function (c) { return sent.indexOf(c) < 0; });
    sent = [];
  });
  // Deleting a file from the Files panel redraws the panel: the focus goes to the next file's Delete
  // (or the one before, or the panel's heading when none is left), not to the page's <body>.
  var deletedAt = null;
  document.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    var item = form && form.closest && form.closest("#files-body li");
    if (!item || !form.matches("form")) return;
    deletedAt = Array.prototype.indexOf.call(item.parentElement.children, item);
  });
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    if (deletedAt === null || !e.detail.target || e.detail.target.id !== "files-body") return;
    var body = document.getElementById("files-body");
    var buttons = body ? body.querySelectorAll(".file-list li button") : [];
    var next = buttons[Math.min(deletedAt, buttons.length - 1)];
    var heading = body && body.querySelector("h2");
    deletedAt = null;
    if (next) {
      next.focus();
    } else if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus();
    }
  });
  // A redrawn composer gets the chips back.
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "composer") draw();
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "composer") draw();
  });
  // The home page shown again after a refused first message: the files it carried are chips again.
  document.addEventListener("DOMContentLoaded", function () {
    var f = form();
    if (!f || !f.dataset.files) return;
    try {
      JSON.parse(f.dataset.files).forEach(function (file) {
        chips.push({key: nextKey++, name: file.name, size: file.size, loaded: file.size, fileId: file.fileId, error: "", xhr: null});
      });
    } catch (err) { /* nothing to restore */ }
    draw();
  });
})();
