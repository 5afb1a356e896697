/**
 * A provider's credentials, registered for masking ({@link registerSecretValues}): its API key
 * and the values of headers that carry one, whatever their shape. Providers register theirs when
 * they are built (in whichever thread or process runs agents), and the Supervisor those of its
 * configured providers (on the thread that writes run directories and prints).
 */
import { registerSecretValues } from '../journal/redact.ts';

/** Header names whose values are credentials (`authorization`, `x-api-key`, Azure's `api-key`). */
const CREDENTIAL_HEADER = /authorization|api[-_]?key|token|secret|cookie/i;

/** The API key and the credential header values given in a provider's settings (with and without their scheme). */
export function credentialsIn(apiKey: unknown, headers: unknown): string[] {
  const values: string[] = [];
  if (typeof apiKey === 'string') values.push(apiKey);
  if (typeof headers === 'object' && headers !== null) {
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string' || !CREDENTIAL_HEADER.test(name)) continue;
      values.push(value, value.replace(/^(?:Bearer|Basic|Token)\s+/i, ''));
    }
  }
  return values;
}

/** The API key and the credential header values of a provider's settings, for masking. */
export function registerCredentials(apiKey: unknown, headers: unknown): void {
  registerSecretValues(credentialsIn(apiKey, headers));
}

/** Environment variables that hold each provider kind's key when its options give none. */
const KEY_VARIABLES: Readonly<Record<string, string>> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
};

/**
 * Registers the credentials of a provider configuration (`{ kind, options }`): `options.apiKey`
 * or the kind's key variable, and `options.headers`.
 */
export function registerConfiguredCredentials(
  kind: string,
  options: Readonly<Record<string, unknown>> | undefined,
  env: NodeJS.ProcessEnv = process.env,
): void {
  const variable = KEY_VARIABLES[kind];
  const apiKey = options?.apiKey ?? (variable === undefined ? undefined : env[variable]);
  registerCredentials(apiKey, options?.headers);
}
