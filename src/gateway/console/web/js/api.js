// The admin API as the console uses it (docs/api.md), and the admin token kept for this tab.

const TOKEN_KEY = 'lm-warden.admin-token';

export class ApiError extends Error {
  constructor(status, message, detail) {
    super(message);
    this.status = status;  // HTTP status, 0 when the warden could not be reached
    this.detail = detail;  // the server's own error text, when it sent one
  }
}

export function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

export function storeToken(token) {
  try {
    if (token) {
      sessionStorage.setItem(TOKEN_KEY, token);
    } else {
      sessionStorage.removeItem(TOKEN_KEY);
    }
  } catch {
    // Storage may be disabled; the token then lives only as long as this page.
  }
}

// The error text a JSON error body carries, in any of the shapes the gateway answers with.
function errorDetail(body) {
  if (!body || typeof body !== 'object') {
    return '';
  }
  const e = body.error;
  if (typeof e === 'string') {
    return e;
  }
  if (e && typeof e.message === 'string') {
    return e.message;
  }
  return typeof body.message === 'string' ? body.message : '';
}

async function request(method, path, { body, token, signal } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
  }
  if (token) {
    headers.authorization = `Bearer ${token}`;
  }
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
    });
  } catch (err) {
    if (err?.name === 'AbortError') {
      throw err;
    }
    throw new ApiError(0, 'The warden could not be reached', String(err?.message ?? err));
  }
  let json = null;
  const text = await response.text();
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!response.ok) {
    throw new ApiError(response.status, `HTTP ${response.status}`, errorDetail(json) || text.slice(0, 200));
  }
  return json;
}

// Asked for a token when a read is refused (a warden with `auth: { reads: true }`): set by main.js to the
// token dialog. One question at a time, however many reads were refused together.
let askForToken = null;
let asking = null;

export function onTokenNeeded(ask) {
  askForToken = ask;
}

// A GET with the token kept for this tab (none until one was asked for); a 401 asks for one and tries again.
async function read(path, signal) {
  try {
    return await request('GET', path, { signal, token: storedToken() });
  } catch (err) {
    if (err?.status !== 401 || !askForToken) {
      throw err;
    }
    const reason = storedToken()
      ? 'The kept token was refused. This warden needs an API key or the admin token to show its state.'
      : 'This warden needs an API key or the admin token to show its state.';
    asking ??= Promise.resolve(askForToken(reason)).finally(() => {
      asking = null;
    });
    const token = await asking;
    if (!token) {
      throw err;
    }
    return request('GET', path, { signal, token });
  }
}

export function getModels(signal) {
  return read('/api/models', signal);
}

export function getModel(name, signal) {
  return read(`/api/models/${encodeURIComponent(name)}`, signal);
}

// `change` is {affinity: bool} and/or {spill_threshold: "auto"|N}.
export function patchRouting(name, change, token) {
  return request('PATCH', `/api/models/${encodeURIComponent(name)}/routing`, { body: change, token });
}

export function getStats(model, windowS, signal) {
  const q = new URLSearchParams({ model, window: String(windowS) });
  return read(`/api/stats?${q}`, signal);
}

// The captured output of a launched model's engines (404 for a model without `launch:`).
export function getModelLogs(name, lines, signal) {
  return read(`/api/models/${encodeURIComponent(name)}/logs?lines=${lines}`, signal);
}
