/**
 * What the command lines do when the reader of their output goes away (`backpackflow runs show r --json | head -3`):
 * the next write to stdout or stderr fails with EPIPE, which Node reports as an 'error' event on the stream (Node
 * ignores SIGPIPE), and unhandled that is a stack trace and exit code 1. Installed once by each binary's entry, for
 * every command: the process ends at once and quietly with exit code 0, as `git log | head` and `seq 1e9 | head`
 * end without a word; nobody reads the rest. A run it was executing stops where it is, as after a kill: it is listed
 * `stopped`, and `runs resume` continues it. Any other error of the streams is thrown as before.
 */
export function exitQuietlyWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(0);
      throw error;
    });
  }
}
