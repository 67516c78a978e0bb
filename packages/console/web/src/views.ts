/**
 * The console's views. Each lives in its own file under `views/`; adding one is a file and a line
 * here. `route` is the first part of the address (`#sessions`, `#session/<id>`); a view with a
 * `label` gets a link in the navigation, in this order; `nav` names the link a sub-view lights up.
 */
import { agentsView } from "./views/agents-view.js";
import { approvalsView } from "./views/approvals-view.js";
import { handlersView } from "./views/handlers-view.js";
import { llmView } from "./views/llm-view.js";
import { mcpView } from "./views/mcp-view.js";
import { pausedView } from "./views/paused-view.js";
import { policiesView } from "./views/policies-view.js";
import { receiptsView } from "./views/receipts-view.js";
import { runsView, runView } from "./views/runs-view.js";
import { sessionsView } from "./views/sessions-view.js";
import { storyView } from "./views/story-view.js";

export interface View {
  route: string;
  /** The navigation link's text; none for a view reached through another (a session's story). */
  label?: string;
  /** The navigation link to light up for a view without one of its own. */
  nav?: string;
  /** Shows the view: `arg` is the address after `route/` (decoded), `query` what follows `?`. */
  render(arg: string, query: string): void;
}

export const VIEWS: View[] = [
  { route: "sessions", label: "Sessions", render: (_arg, query) => sessionsView(query) },
  { route: "session", nav: "sessions", render: (id) => storyView(id) },
  { route: "approvals", label: "Approvals", render: () => approvalsView() },
  { route: "paused", label: "Paused sessions", render: () => pausedView() },
  { route: "receipts", label: "Receipts", render: () => receiptsView() },
  { route: "runs", label: "Runs", render: () => runsView() },
  { route: "run", nav: "runs", render: (id) => runView(id) },
  { route: "handlers", label: "Handlers", render: () => handlersView() },
  { route: "policies", label: "Policies", render: () => policiesView() },
  { route: "agents", label: "Agents", render: () => agentsView() },
  { route: "mcp", label: "MCP servers", render: () => mcpView() },
  { route: "llm", label: "Model spend", render: () => llmView() },
];

/** The view shown after sign-in and for an unknown address. */
export const LANDING = "sessions";
