"""The approvals page's one script, served as /approvals/passkey.js (the page's CSP allows
scripts from itself only): it runs the WebAuthn ceremonies for buttons marked
`data-passkey` (register, or approve an approval) and posts their answers with the page's
CSRF token. `window.signoffPasskey` holds its steps, so a test can drive them one by one."""

SCRIPT = r"""
(() => {
  const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const bytes = (text) => Uint8Array.from(
    atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const csrf = () => document.querySelector("input[name=csrf]").value;
  async function post(url, body) {
    const answer = await fetch(url, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify(Object.assign({csrf: csrf()}, body || {}))});
    const said = await answer.json();
    return Object.assign({status: answer.status}, said);
  }
  function ids(list) {
    return (list || []).map((c) => Object.assign({}, c, {id: bytes(c.id)}));
  }
  async function create(options) {
    const made = await navigator.credentials.create({publicKey: Object.assign({}, options, {
      challenge: bytes(options.challenge),
      user: Object.assign({}, options.user, {id: bytes(options.user.id)}),
      excludeCredentials: ids(options.excludeCredentials)})});
    return {id: made.id, rawId: b64(made.rawId), type: made.type,
      response: {clientDataJSON: b64(made.response.clientDataJSON),
                 attestationObject: b64(made.response.attestationObject)}};
  }
  async function get(options) {
    const got = await navigator.credentials.get({publicKey: Object.assign({}, options, {
      challenge: bytes(options.challenge), allowCredentials: ids(options.allowCredentials)})});
    const r = got.response;
    return {id: got.id, rawId: b64(got.rawId), type: got.type,
      response: {clientDataJSON: b64(r.clientDataJSON),
                 authenticatorData: b64(r.authenticatorData), signature: b64(r.signature),
                 userHandle: r.userHandle ? b64(r.userHandle) : null}};
  }
  async function run(button) {
    const url = button.dataset.passkey;
    const shown = document.getElementById("passkey-said");
    try {
      const options = await post(url + "/options");
      if (options.status !== 200) { throw new Error(options.message); }
      const credential = url.endsWith("/passkeys")
        ? await create(options.options) : await get(options.options);
      const done = await post(url, {credential});
      shown.textContent = done.message;
      shown.className = done.status === 200 ? "notice" : "notice refused";
    } catch (error) {
      shown.textContent = String(error.message || error);
      shown.className = "notice refused";
    }
  }
  window.signoffPasskey = {post, create, get, run};
  document.querySelectorAll("[data-passkey]").forEach((button) =>
    button.addEventListener("click", () => run(button)));
})();
"""
