/* The API page: Swagger UI (static/vendor/swagger-ui) over the OpenAPI document. An
 * external file (no inline script): it works under the strict Content-Security-Policy.
 *
 * - no validator badge: it would load an image from validator.swagger.io;
 * - "Try it out" runs as the page's user: a same-origin POST carries the CSRF token, which
 *   a session needs (a bearer token given to Authorize needs none);
 * - Swagger UI's dark styles follow the browser's colour scheme, like the other pages.
 */
(function () {
  "use strict";

  var root = document.getElementById("swagger-ui");
  var csrfToken = root.getAttribute("data-csrf-token");
  var dark = window.matchMedia("(prefers-color-scheme: dark)");

  function followScheme() {
    document.documentElement.classList.toggle("dark-mode", dark.matches);
  }
  followScheme();
  dark.addEventListener("change", followScheme);

  function needsCsrf(request) {
    var safe = /^(GET|HEAD|OPTIONS)$/i.test(request.method || "GET");
    return !safe && new URL(request.url, window.location.href).origin === window.location.origin;
  }

  window.SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    domNode: root,
    layout: "BaseLayout",
    presets: [window.SwaggerUIBundle.presets.apis],
    deepLinking: true,
    validatorUrl: null,
    requestInterceptor: function (request) {
      if (csrfToken && needsCsrf(request)) request.headers["X-CSRFToken"] = csrfToken;
      return request;
    },
  });
})();
