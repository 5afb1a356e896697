/** `troupe/testing`: helpers for users' tests. */
export {};
