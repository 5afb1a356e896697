/**
 * Credentials registered in another thread, masked in this one too: the supervisor's side of those
 * registered where agents run (an actor host's thread, a redis worker), since results are written
 * from the supervisor's thread; and an actor host's side of those the program registered in the
 * supervisor's thread, since journals are written where agents run.
 */
import { serializeError } from '../../errors.ts';
import { registerSecretValues } from '../../journal/redact.ts';

/** Registers forwarded credentials in this thread, warning once when it holds too many. */
export class ForwardedSecrets {
  #refused = false;

  /**
   * Masks `values` here from now on. This thread holds at most MAX_LITERAL_SECRETS values; past
   * that many across threads and workers, it keeps those it has and says so once, as a process
   * warning (`TROUPE_TOO_MANY_SECRETS`): the new ones cannot be masked in results.
   */
  register(values: readonly string[]): void {
    try {
      registerSecretValues(values);
    } catch (error) {
      if (this.#refused) return;
      this.#refused = true;
      process.emitWarning(serializeError(error).message, {
        type: 'TroupeWarning',
        code: 'TROUPE_TOO_MANY_SECRETS',
      });
    }
  }
}
