// A form's error is where the user looks: the page comes back scrolled to it, with the focus
// on it (screen readers read it; the role=alert says so too), however far down the form is.
(function () {
  "use strict";
  var error = document.getElementById("form-error");
  if (!error) return;
  error.setAttribute("tabindex", "-1");
  error.scrollIntoView({ block: "center" });
  error.focus({ preventScroll: true });
})();
