/** The studio page: a header, then the runs table, a run, or memory, by the location hash. */
import { render } from 'preact';
import { getJson, type StudioInfo } from './client.js';
import { useLoad, useRoute } from './hooks.js';
import { MemoryView } from './memory-view.js';
import { Problem } from './parts.js';
import { RunView } from './run-view.js';
import { RunsView } from './runs-view.js';

function App() {
  const route = useRoute();
  const info = useLoad((signal) => getJson<StudioInfo>('/api/info', {}, signal), []);
  return (
    <>
      <header class="top">
        <a href="#/" class="brand">
          backpackflow studio
        </a>
        <nav aria-label="main">
          <a href="#/" aria-current={route.page !== 'memory' ? 'page' : undefined}>
            Runs
          </a>
          <a href="#/memory" aria-current={route.page === 'memory' ? 'page' : undefined}>
            Memory
          </a>
        </nav>
        {info.data && <span class="muted small">{info.data.dataDir}</span>}
      </header>
      <main>
        {info.error && <Problem text={info.error} />}
        {route.page === 'runs' && <RunsView session={info.data?.session ?? null} />}
        {route.page === 'memory' && <MemoryView q={route.q} />}
        {route.page === 'run' && <RunView session={route.session} runId={route.runId} tab={route.tab} params={route.params} eventTypes={info.data?.eventTypes ?? []} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
