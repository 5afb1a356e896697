/**
 * troupe's public API. Everything exported here is documented and stable within a minor version;
 * anything else is internal.
 */

export type { ErrorFields, SerializedError } from './errors.ts';
export {
  describeValue,
  deserializeError,
  hasErrorCode,
  isTroupeError,
  ModelBehaviorError,
  ProviderError,
  SystemError,
  serializeError,
  TroupeError,
  UserError,
} from './errors.ts';
