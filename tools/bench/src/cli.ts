// `npm run bench [-- <name>] [options]`: every bench (the umbrella run, writing
// bench/results/latest.{json,md}), or one by name in this process.
import { parseArgs } from 'node:util';
import { fail } from '@pcp/setup';
import { BENCHES, isBenchName } from './benches/index.js';
import { runAll, type UmbrellaOptions } from './umbrella.js';

const HELP = `usage: npm run bench [-- <name>] [options]

  npm run bench                 every bench, with one and two replicas of each service, into
                                bench/results/latest.json and latest.md (umbrella-sized settings)
  npm run bench -- <name>       one bench, with its own (full) settings, printing its tables
  npm run bench -- <a>,<b>      some of the benches as the umbrella run does (= --only <a>,<b>),
                                merged into latest.*: the others keep their last figures

benches:
${Object.entries(BENCHES)
  .map(([name, bench]) => `  ${name.padEnd(17)} ${bench.summary}`)
  .join('\n')}

options of the umbrella run:
  --only stores,cart      some of the benches (the baselines always run)
  --replicas 1,2          the replica counts to run every bench with (default 1,2)
  --full                  each bench's own (full) sizes
  --out <dir>             where latest.json, latest.md and logs/ go (bench/results)
  --timeout-minutes <n>   end a bench that runs longer (default 20, 60 with --full)
  --render                only write latest.md anew from latest.json (no bench runs)

Each figure in latest.md is followed by the previous run's, "(prev X, ±Δ %)".

Each bench reads its settings from BENCH_* variables (e.g. BENCH_SECONDS=5, BENCH_REPLICAS=2,
BENCH_NODE_ARGS="--cpu-prof"); docs/benchmarks.md lists them.
`;

const args = process.argv.slice(2);
const [first] = args;
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(HELP);
} else if (first !== undefined && !first.startsWith('-') && !first.includes(',')) {
  if (!isBenchName(first) || args.length > 1) {
    fail(new Error(`unknown bench or extra arguments: ${args.join(' ')}\n\n${HELP}`));
  } else {
    process.env.BENCH_NAME ??= first;
    await BENCHES[first].run();
  }
} else {
  await runAll(umbrellaOptions());
}

function umbrellaOptions(): UmbrellaOptions {
  // `npm run bench -- stores,cart`: the list is --only's.
  const listed = first?.includes(',') ? ['--only', first, ...args.slice(1)] : args;
  try {
    return parseArgs({
      args: listed,
      options: {
        only: { type: 'string' },
        replicas: { type: 'string', default: '1,2' },
        full: { type: 'boolean', default: false },
        out: { type: 'string' },
        'timeout-minutes': { type: 'string' },
        render: { type: 'boolean', default: false },
      },
    }).values;
  } catch (error) {
    return fail(error);
  }
}
