/**
 * Lists the longest functions of the TypeScript sources, measured in lines from the first line of
 * the declaration to its closing brace (nested functions count in their parent too).
 *
 *   pnpm functions                       # the 15 longest in packages/ and services/ (tests excluded)
 *   pnpm functions --top 30 services/verifier
 *   pnpm functions --max 150             # exit 1 when any function is longer than 150 lines
 *   pnpm functions --tests               # include *.test.ts files
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import ts from "typescript";

export interface FunctionLength {
  file: string;
  line: number;
  name: string;
  lines: number;
}

/** A readable name for a function-like node: its own, or what it is assigned to. */
function nameOf(node: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  if (node.name && !ts.isComputedPropertyName(node.name)) return node.name.getText(sf);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(sf);
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(sf).slice(0, 40)})`;
  if (ts.isConstructorDeclaration(node)) return "constructor";
  return "(anonymous)";
}

/** Every function, method, accessor and arrow function of one file with its length in lines. */
export function functionLengths(file: string, text = readFileSync(file, "utf8")): FunctionLength[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ file, line: start + 1, name: nameOf(node, sf), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

function sourceFiles(root: string, withTests: boolean): string[] {
  const st = statSync(root);
  if (st.isFile()) return [root];
  const files: string[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    const full = path.join(root, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(full, withTests));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) {
      if (withTests || !/\.test\.tsx?$/.test(entry.name)) files.push(full);
    }
  }
  return files;
}

function main(argv: string[]): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      top: { type: "string", default: "15" },
      max: { type: "string" },
      tests: { type: "boolean", default: false },
    },
  });
  const roots = positionals.length > 0 ? positionals : ["packages", "services"];
  const all = roots
    .flatMap((r) => sourceFiles(r, values.tests))
    .flatMap((f) => functionLengths(f))
    .sort((a, b) => b.lines - a.lines);
  const top = Number(values.top);
  const width = Math.max(...all.slice(0, top).map((f) => `${f.file}:${f.line}`.length), 10);
  for (const f of all.slice(0, top))
    process.stdout.write(
      `${String(f.lines).padStart(5)}  ${`${f.file}:${f.line}`.padEnd(width)}  ${f.name}\n`,
    );
  const under60 = all.filter((f) => f.lines <= 60).length;
  process.stdout.write(
    `${all.length} functions, ${under60} of them (${Math.round((100 * under60) / Math.max(1, all.length))}%) at most 60 lines\n`,
  );
  if (values.max !== undefined) {
    const limit = Number(values.max);
    const over = all.filter((f) => f.lines > limit);
    if (over.length > 0) {
      process.stderr.write(`${over.length} function(s) longer than ${limit} lines\n`);
      return 1;
    }
  }
  return 0;
}

if (process.argv[1] && import.meta.filename === process.argv[1])
  process.exitCode = main(process.argv.slice(2));
