// Swagger UI as kts serves it at /docs (see app/api/docs.py): the page's settings come from this script tag's
// data attributes (no inline script, so the page's Content-Security-Policy needs no exception), and Authorize
// says "Authorized" only for credentials kts accepted: it asks kts first and shows a refusal in the dialog.
(function () {
  "use strict";
  var settings = document.currentScript.dataset;

  // The Authorization header Swagger UI itself would send for one entry of the Authorize dialog, or null for a
  // scheme kts does not check here.
  function authorizationFor(schema, value) {
    var scheme = String(schema.get("scheme") || "").toLowerCase();
    if (schema.get("type") !== "http") {
      return null;
    }
    if (scheme === "basic") {
      var text = (value.username || "") + ":" + (value.password || "");
      var bytes = new TextEncoder().encode(text);
      var binary = "";
      bytes.forEach(function (byte) {
        binary += String.fromCharCode(byte);
      });
      return "Basic " + btoa(binary);
    }
    if (scheme === "bearer") {
      return "Bearer " + value;
    }
    return null;
  }

  function refusal(response, body) {
    var said = "";
    try {
      var error = JSON.parse(body);
      said = " " + error.error + ": " + error.message;
    } catch (ignored) {
      said = body ? " " + body : "";
    }
    return "kts refused these credentials (" + response.status + ")." + said;
  }

  function CheckCredentialsPlugin() {
    return {
      statePlugins: {
        auth: {
          wrapActions: {
            authorize: function (authorize, system) {
              return function (payload) {
                Object.keys(payload).forEach(function (name) {
                  var entry = payload[name];
                  var single = {};
                  single[name] = entry;
                  system.errActions.clear({ authId: name, source: "auth" });
                  var header = authorizationFor(entry.schema, entry.value);
                  if (header === null) {
                    authorize(single);
                    return;
                  }
                  fetch(settings.checkUrl, {
                    headers: { Authorization: header },
                    credentials: "omit",
                    cache: "no-store",
                  })
                    .then(function (response) {
                      if (response.ok) {
                        authorize(single);
                        return null;
                      }
                      return response.text().then(function (body) {
                        system.errActions.newAuthErr({
                          authId: name,
                          level: "error",
                          source: "auth",
                          message: refusal(response, body),
                        });
                      });
                    })
                    .catch(function (problem) {
                      system.errActions.newAuthErr({
                        authId: name,
                        level: "error",
                        source: "auth",
                        message: "kts could not be asked to check these credentials: " + problem.message,
                      });
                    });
                });
              };
            },
          },
        },
      },
    };
  }

  window.ui = SwaggerUIBundle({
    url: settings.openapiUrl,
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
    plugins: [CheckCredentialsPlugin],
    // Never keep what was entered in the Authorize dialog: Swagger UI would write the password or bearer token
    // to the browser's local storage, readable by any script of this origin and left on shared machines.
    persistAuthorization: false,
    // No badge fetched from the public Swagger validator: deployments may have no way out.
    validatorUrl: null,
  });
})();
