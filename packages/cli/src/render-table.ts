/** A plain text table for people: a header row, a dashed rule, then the rows, columns padded. */
export function renderTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return `${[line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n")}\n`;
}
