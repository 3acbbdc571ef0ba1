// A tiny element builder: h('td', {class: 'x'}, 'text', child...). Text is always set as text, never as
// HTML, so nothing from the API can inject markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) {
      continue;
    }
    if (Array.isArray(child)) {
      append(el, child);
    } else if (child instanceof Node) {
      el.appendChild(child);
    } else {
      el.appendChild(document.createTextNode(String(child)));
    }
  }
}

// Sets a text node's content only when it changed, so live updates do not disturb selection or readers.
export function setText(el, text) {
  if (el.textContent !== text) {
    el.textContent = text;
  }
}

// Polls `fn` every `intervalMs` after the previous call settles; stops when `stop()` is called. Pauses
// while the tab is hidden.
export function poll(fn, intervalMs) {
  let timer = null;
  let stopped = false;
  let controller = null;
  const run = async () => {
    timer = null;
    if (stopped) {
      return;
    }
    if (document.hidden) {
      timer = setTimeout(run, intervalMs);
      return;
    }
    controller = new AbortController();
    try {
      await fn(controller.signal);
    } catch (err) {
      if (err?.name !== 'AbortError') {
        console.warn('lm-warden console: update failed', err);
      }
    }
    controller = null;
    if (!stopped) {
      timer = setTimeout(run, intervalMs);
    }
  };
  run();
  return {
    stop() {
      stopped = true;
      if (timer) {
        clearTimeout(timer);
      }
      controller?.abort();
    },
    now() {
      if (timer) {
        clearTimeout(timer);
        run();
      }
    },
  };
}
