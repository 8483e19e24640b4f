// The emulator's suites' shared set-up (docs/emulator.md): a PostgreSQL, an
// emulator on it with a small fleet (nodes of each kind in each region),
// and a plain server on the same database with no scheduler, whose
// emulator controls are shut. Call in before(); stop() in after().

import { client, startPostgres, startServer } from './harness.mjs';

export const IMAGE = { imageUri: 'us-docker.pkg.dev/team/trainer:1' };

export async function startEmulatorPair({ nodesPerType = 2, env = {} } = {}) {
  const pg = await startPostgres();
  const pair = { pg, emu: null, plain: null, c: null };
  pair.stop = async () => {
    if (pair.plain) await pair.plain.stop();
    if (pair.emu) await pair.emu.stop();
    await pg.cleanup();
  };
  pair.emu = await startServer({ pg, args: ['--emulator'], env: {
    TRAINPLANE_EMULATOR_NODES_PER_TYPE: String(nodesPerType), TRAINPLANE_SCHEDULER_TICK_MS: '200', ...env } });
  pair.plain = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false' } });
  pair.c = client(pair.emu.base);
  return pair;
}
