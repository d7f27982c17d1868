// How often streaming text is shown again. Each update lays out and paints what changed, and
// where the window paints in software that, not the Markdown, is the cost.

/** Fast enough to read as a stream, and a third of the updates a token each would make at 30
 * tokens a second (a batch job's many samples send far more). */
export const STREAM_UPDATE_MS = 100;

/** An event handler that applies text deltas together, at most every STREAM_UPDATE_MS and in an
 * animation frame; any other event applies what waits, then itself, at once, so the order holds.
 * Each event is applied with the time it arrived (a thinking timer must not count the wait). */
export function cadenced<E>(apply: (e: E, at: number) => void, isDelta: (e: E) => boolean): (e: E) => void {
  const queued: [E, number][] = [];
  let pending: ReturnType<typeof setTimeout> | null = null;
  let lastUpdate = -Infinity;
  const flush = () => {
    if (pending !== null) clearTimeout(pending);
    pending = null;
    lastUpdate = performance.now();
    for (const [e, at] of queued.splice(0)) apply(e, at);
  };
  return (e: E) => {
    queued.push([e, Date.now()]);
    if (!isDelta(e)) flush();
    else pending ??= setTimeout(() => nextFrame(flush), Math.max(0, lastUpdate + STREAM_UPDATE_MS - performance.now()));
  };
}

/** The next animation frame, or a timer's worth where there are no frames (a hidden window,
 * a test without layout). */
function nextFrame(f: () => void) {
  if (typeof requestAnimationFrame === 'function' && document.visibilityState !== 'hidden') requestAnimationFrame(f);
  else setTimeout(f, 16);
}
