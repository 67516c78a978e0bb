import { userInfo } from "node:os";
import type { CommandIO } from "./command.js";

/** Who writes a record from this CLI (`updated_by`): `GEODE_OPERATOR`, else the login name. */
export function operatorName(io: CommandIO): string {
  const named = io.env["GEODE_OPERATOR"];
  if (named) return named.slice(0, 128);
  try {
    return userInfo().username.slice(0, 128);
  } catch {
    return "unknown";
  }
}
