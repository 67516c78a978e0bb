/** What tests of the CLI and of programs driving it import: run a command and keep what it wrote. */
export { type CapturedIO, captureIO, runCliCaptured } from "./capture-io.js";
