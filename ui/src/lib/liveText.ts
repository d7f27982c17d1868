// Text that grows while it is shown, split so that an update touches only what changed.

/** `text` as its lines, each with its own line break (the last has none): joined they are
 * `text` again. Shown each in a `white-space: pre-wrap` block they lay out as the whole text
 * would in one: a line break that ends a block adds no line, and a lone one is an empty line. */
export function lines(text: string): string[] {
  const out = text.split('\n').map((line) => line + '\n');
  out[out.length - 1] = out[out.length - 1].slice(0, -1);
  return out;
}
