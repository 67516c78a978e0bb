/**
 * A generated block of a document: the text between its begin and end markers (markers
 * included), which a docs script renders and a test compares with the committed file.
 */
export function replaceBlock(
  doc: string,
  marks: { begin: string; end: string; file: string },
  block: string,
): string {
  const start = doc.indexOf(marks.begin);
  const end = doc.indexOf(marks.end);
  if (start < 0 || end < start) throw new Error(`${marks.file} has no ${marks.begin} … ${marks.end} block`);
  return `${doc.slice(0, start)}${block}${doc.slice(end + marks.end.length)}`;
}
