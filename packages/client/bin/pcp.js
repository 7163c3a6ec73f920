#!/usr/bin/env node
// The `pcp` command. A checked-in file keeps its executable bit on a fresh clone; the compiled
// CLI it loads is written by the build and would not have one.
import '../dist/cli/pcp.js';
