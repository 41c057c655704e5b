/**
 * Kept so imports written before the failure table compile: the vocabulary (run failures and the
 * API's codes alike) is the one table in `failures.ts`. New code imports from there.
 */
export { FailureCode as FailureType, FailureCode as ApiErrorCode, isFailureCode as isFailureType } from './failures';
