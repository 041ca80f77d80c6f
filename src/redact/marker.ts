/** What replaces a secret (a module of its own, so that the Studio's page can use it without the redactor). */
export const REDACTED = '[REDACTED]';
