#!/usr/bin/env node
// The `plants` command: the built CLI (`pnpm --filter @plant-store/client build` inside the workspace).
import '../dist/cli.js';
