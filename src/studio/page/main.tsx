/** The studio page: a header, then the runs table, a run, memory, or the workspace's context, by the location hash. */
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { adoptToken, getJson, type StudioInfo } from './client.js';
import { ContextView } from './context-view.js';
import { useLoad, useRoute } from './hooks.js';
import { MemoryView } from './memory-view.js';
import { Problem } from './parts.js';
import { RunView } from './run-view.js';
import { RunsView } from './runs-view.js';

adoptToken();

const THEMES = ['auto', 'light', 'dark'] as const;
type Theme = (typeof THEMES)[number];

function applyTheme(theme: Theme): void {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

function storedTheme(): Theme {
  try {
    const t = localStorage.getItem('bpf-studio-theme');
    return THEMES.includes(t as Theme) ? (t as Theme) : 'auto';
  } catch {
    return 'auto';
  }
}

/** Light, dark, or the system's choice; remembered in this browser. */
function ThemeSwitch() {
  const [theme, setTheme] = useState<Theme>(storedTheme);
  applyTheme(theme);
  return (
    <label class="theme small">
      Theme{' '}
      <select
        value={theme}
        onChange={(e) => {
          const next = e.currentTarget.value as Theme;
          setTheme(next);
          try {
            localStorage.setItem('bpf-studio-theme', next);
          } catch {
            // storage may be off: the choice lasts for this page
          }
        }}
      >
        {THEMES.map((t) => (
          <option value={t}>{t === 'auto' ? 'system' : t}</option>
        ))}
      </select>
    </label>
  );
}

function App() {
  const route = useRoute();
  const info = useLoad((signal) => getJson<StudioInfo>('/api/info', {}, signal), []);
  return (
    <>
      <a href="#main" class="skip">
        Skip to content
      </a>
      <header class="top">
        <a href="#/" class="brand">
          backpackflow studio
        </a>
        <nav aria-label="main">
          <a href="#/" aria-current={route.page === 'runs' || route.page === 'run' ? 'page' : undefined}>
            Runs
          </a>
          <a href="#/memory" aria-current={route.page === 'memory' ? 'page' : undefined}>
            Memory
          </a>
          {info.data?.workspace && (
            <a href="#/context" aria-current={route.page === 'context' ? 'page' : undefined}>
              Context
            </a>
          )}
        </nav>
        {info.data && <span class="muted small" title={info.data.store === 'postgres' ? 'runs stored in PostgreSQL' : 'runs stored in a data directory'}>{info.data.location}</span>}
        <ThemeSwitch />
      </header>
      <main id="main" tabIndex={-1}>
        {info.error && <Problem text={info.error} />}
        {route.page === 'runs' && <RunsView session={info.data?.session ?? null} />}
        {route.page === 'memory' && <MemoryView q={route.q} />}
        {route.page === 'context' && <ContextView path={route.path} />}
        {route.page === 'run' && (
          // One view per run (keyed): another run's data or job never shows under this one's id while it loads.
          <RunView key={`${route.session}/${route.runId}`} session={route.session} runId={route.runId} tab={route.tab} params={route.params} eventTypes={info.data?.eventTypes ?? []} canWrite={info.data?.canWrite ?? false} tokenRequired={info.data?.tokenRequired ?? false} />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
