import type { ConsoleLoginRequest } from "@geode/contracts";
import { api } from "../api.js";
import { main } from "../app.js";
import { el } from "../dom.js";

/** The sign-in page: the console token and the operator's name, once; `signedIn` runs after. */
export function loginView(signedIn: () => Promise<void>): void {
  const token = el("input", {
    id: "login-token",
    type: "password",
    name: "token",
    autocomplete: "off",
    required: "",
    "aria-describedby": "login-error",
  });
  const operator = el("input", {
    id: "login-operator",
    type: "text",
    name: "operator",
    autocomplete: "username",
    required: "",
    pattern: "[A-Za-z0-9_.@\\-]{1,64}",
  });
  operator.value = localStorage.getItem("geode-operator") ?? "";
  const error = el("p", { id: "login-error", class: "bad", role: "alert" });
  const form = el(
    "form",
    { class: "login", "aria-labelledby": "login-title" },
    el("h2", { id: "login-title" }, "Sign in"),
    el(
      "p",
      { class: "hint" },
      "The token is GEODE_CONSOLE_TOKEN of the console's environment. Your name is what your approvals record.",
    ),
    el("label", { for: "login-token" }, "Console token"),
    token,
    el("label", { for: "login-operator" }, "Your name"),
    operator,
    error,
    el("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void (async () => {
      try {
        const login: ConsoleLoginRequest = { token: token.value, operator: operator.value };
        await api("/api/login", login);
        localStorage.setItem("geode-operator", operator.value);
        token.value = "";
        error.textContent = "";
        await signedIn();
      } catch (err) {
        error.textContent = err instanceof Error ? err.message : String(err);
        token.focus();
      }
    })();
  });
  main.replaceChildren(el("div", { class: "login-page" }, form));
  (operator.value ? token : operator).focus();
}
