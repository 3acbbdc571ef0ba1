// The console's router: hash routes, one page mounted at a time.
//   #/models              every configured model
//   #/models/NAME         one model and its "Data parallel routing" card
//   #/stats[/NAME]        tokens per second over the last hour
import { onTokenNeeded } from './api.js';
import { adminToken } from './token.js';
import * as modelsPage from './pages/models.js';
import * as modelPage from './pages/model.js';
import * as statsPage from './pages/stats.js';

// What tests and curious users can inspect: the page shown and the data it was drawn from.
window.wardenConsole = { page: null, ready: false };

// A warden that needs a key for reads: the token dialog asks for it, as for a change.
onTokenNeeded(adminToken);

let current = null;

function parseRoute(hash) {
  const path = hash.replace(/^#/, '').replace(/^\/+/, '');
  const parts = path.split('/').filter((p) => p !== '').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  if (parts[0] === 'models' && parts.length >= 2) {
    return { page: modelPage, name: 'model', params: { model: parts.slice(1).join('/') } };
  }
  if (parts[0] === 'stats') {
    return { page: statsPage, name: 'stats', params: { model: parts.slice(1).join('/') || null } };
  }
  return { page: modelsPage, name: 'models', params: {} };
}

function render() {
  const route = parseRoute(location.hash);
  current?.unmount?.();
  const main = document.getElementById('main');
  main.replaceChildren();
  for (const a of document.querySelectorAll('[data-nav]')) {
    const here = a.dataset.nav === route.name || (a.dataset.nav === 'models' && route.name === 'model');
    if (here) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
  window.wardenConsole = { page: route.name, ready: false };
  document.body.dataset.page = route.name;
  current = route.page.mount(main, route.params);
}

window.addEventListener('hashchange', () => {
  render();
  document.getElementById('main').focus({ preventScroll: true });
});

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', render);
} else {
  render();
}
