// Admin forms: Django's prepopulate.js fills a slug from its source fields on keyup, change and focus,
// so a name that is pasted, dropped or autofilled (input events, no keystrokes) left the slug empty
// until the field lost focus. Each input of a source field is passed on as the keyup it listens for.
(function () {
  "use strict";
  document.addEventListener("input", function (e) {
    var constants = document.getElementById("django-admin-prepopulated-fields-constants");
    if (!constants || !e.target.id) return;
    var fields = JSON.parse(constants.dataset.prepopulatedFields || "[]");
    var source = fields.some(function (field) {
      return field.dependency_ids.indexOf("#" + e.target.id) !== -1;
    });
    if (source) e.target.dispatchEvent(new KeyboardEvent("keyup", {bubbles: true}));
  });
})();
