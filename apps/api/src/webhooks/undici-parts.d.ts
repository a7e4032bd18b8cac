// The two modules of undici (pinned in package.json) that connections.ts imports by path: the
// package declares types for its index only, and has no `exports` map that would hide these.
declare module 'undici/lib/dispatcher/agent.js' {
  export { Agent as default } from 'undici';
}
declare module 'undici/lib/core/connect.js' {
  export { buildConnector as default } from 'undici';
}
