// Asks for the admin token once and keeps it for the tab (sessionStorage, via api.js).
import { storedToken, storeToken } from './api.js';

// Resolves to the token, asking for it when none is kept (or when `reason` says the kept one was refused);
// resolves to null when the user cancels.
export function adminToken(reason) {
  const kept = storedToken();
  if (kept && !reason) {
    return Promise.resolve(kept);
  }
  const dialog = document.getElementById('token-dialog');
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  const text = document.getElementById('token-dialog-text');
  const cancel = document.getElementById('token-cancel');
  if (reason) {
    text.dataset.original ??= text.textContent;
    text.textContent = reason;
  } else if (text.dataset.original) {
    text.textContent = text.dataset.original;
  }
  input.value = '';
  return new Promise((resolve) => {
    const finish = (token) => {
      form.removeEventListener('submit', onSubmit);
      cancel.removeEventListener('click', onCancel);
      dialog.removeEventListener('cancel', onCancel);
      if (dialog.open) {
        dialog.close();
      }
      resolve(token);
    };
    const onSubmit = (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) {
        input.focus();
        return;
      }
      storeToken(token);
      finish(token);
    };
    const onCancel = (event) => {
      event.preventDefault();
      finish(null);
    };
    form.addEventListener('submit', onSubmit);
    cancel.addEventListener('click', onCancel);
    dialog.addEventListener('cancel', onCancel);
    dialog.showModal();
    input.focus();
  });
}

export function forgetToken() {
  storeToken('');
}

export function hasToken() {
  return storedToken() !== '';
}
