// Tuning studies surviving failures (issue 26): a study's trials are jobs,
// so a lost node restarts a trial's replicas elsewhere as it would any
// job's, and the study pass is the leader's, so a new leader goes on with
// the study where the old one stopped. Either way the study ends with each
// trial once: none lost, none run twice under two numbers.
//
// Real servers, real agents, process replicas. Every trial's trainer notes
// its start (trial, pid, folder) in a shared file, then waits for a gate
// the test opens, writes its score (its x) to the metric file and exits.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_BIN, createJob, getJob, getNode, killMarked, pgrep, startAgent, waitJobState,
} from './agents.mjs';

const PROJECT = 'tuneres';

let pg;
before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  if (pg) await pg.cleanup();
});

let worlds = 0;

/** A database of its own, a temp dir, a marker, the gate; everything killed after the test. */
function world(t) {
  const w = {
    dir: makeTempDir('tp-tuneres-'),
    db: pg.newDatabase('tuneres'),
    servers: [],
    agents: [],
    mark: `tptuneres_${process.pid}_${Date.now().toString(36)}_${++worlds}`,
  };
  w.starts = path.join(w.dir, 'starts.txt');
  fs.writeFileSync(w.starts, '');
  w.gate = path.join(w.dir, 'gate');
  t.after(() => {
    for (const a of w.agents) a.cleanup();
    killMarked(w.mark);
    for (const s of w.servers) s.kill();
  });
  w.server = async (env = {}) => {
    const s = await startServer({ pg: w.db, env: { TRAINPLANE_SCHEDULER_TICK_MS: '100', ...env } });
    w.servers.push(s);
    return s;
  };
  w.agent = async (server, opts) => {
    const a = await startAgent(server, { dir: w.dir, ...opts });
    w.agents.push(a);
    return a;
  };
  w.logs = () => [...w.agents.map((a) => `== agent ${a.node}\n${a.stderr().slice(-2500)}`),
    ...w.servers.map((s, i) => `== server ${i}\n${s.stderr().slice(-3000)}`)].join('\n');
  /** The trainers' starts, in order: [{ trial, pid, cwd }]. */
  w.started = () => fs.readFileSync(w.starts, 'utf8').split('\n').filter(Boolean).map((l) => {
    const [trial, pid, cwd] = l.split(' ');
    return { trial: Number(trial), pid: Number(pid), cwd };
  });
  /** The agent whose work dir holds `cwd`. */
  w.agentAt = (cwd) => w.agents.find((a) => cwd.startsWith(`${a.workDir}/`));
  return w;
}

/**
 * A grid study over x = 1..maxTrials (so every trial has its own x) whose
 * trainer notes its start, reports its progress (step 0, score -1) when it
 * is the trial's first attempt, waits for the gate, and reports score = x
 * at step 1.
 */
function study(w, { maxTrials, maxParallelTrials }) {
  const script = `: ${w.mark}; x=0; for a in "$@"; do case "$a" in --x=*) x=\${a#--x=};; esac; done; ` +
    `echo "$CLOUD_ML_TRIAL_ID $$ $PWD" >> ${w.starts}; ` +
    // The first attempt of a trial reports its progress (step 0: -1) before the gate.
    `if [ "$(grep -c "^$CLOUD_ML_TRIAL_ID " ${w.starts})" = 1 ]; then ` +
    'printf \'{"global_step": "0", "score": "-1", "trial": "%s"}\\n\' "$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"; fi; ' +
    `while [ ! -e ${w.gate} ]; do sleep 0.05; done; ` +
    'printf \'{"global_step": "1", "score": "%s", "trial": "%s"}\\n\' "$x" "$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"; ' +
    'echo "trial $CLOUD_ML_TRIAL_ID x=$x"';
  return {
    scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
    masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', script, 'trainer'] },
    hyperparameters: {
      hyperparameterMetricTag: 'score', goal: 'MAXIMIZE', algorithm: 'GRID_SEARCH',
      maxTrials, maxParallelTrials,
      params: [{ parameterName: 'x', type: 'INTEGER', minValue: 1, maxValue: maxTrials }],
    },
  };
}

/**
 * The study's output holds exactly trials 1..n, each once, SUCCEEDED, with
 * its own x and its score (= x) as its final metric.
 */
function assertTrials(done, n) {
  const out = done.trainingOutput;
  const want = Array.from({ length: n }, (_, i) => String(i + 1));
  assert.deepEqual(out.trials.map((t) => t.trialId).sort((a, b) => a - b), want,
    `trials 1..${n}, each once: ${JSON.stringify(out.trials)}`);
  assert.equal(out.completedTrialCount, String(n));
  assert.deepEqual(out.trials.map((t) => t.hyperparameters.x).sort((a, b) => a - b), want,
    'every point of the grid once');
  for (const t of out.trials) {
    assert.equal(t.state, 'SUCCEEDED', JSON.stringify(t));
    assert.deepEqual(t.finalMetric, { trainingStep: '1', objectiveValue: Number(t.hyperparameters.x) },
      JSON.stringify(t));
  }
  assert.deepEqual(out.trials.map((t) => t.trialId), [...want].reverse(), 'best first');
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return !/ Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/, ')'));
  } catch {
    return false;
  }
}

async function leading(server) {
  const res = await request(server.base, 'GET', '/metrics');
  return /^trainplane_scheduler_leader 1$/m.test(res.text);
}

// Each test has a world of its own (database, servers, agents, marker, gate): both run at once.
describe('tuning studies surviving failures', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set', concurrency: 2 }, () => {
  it('kill -9 of the agent running a trial: the trial restarts on the other node, the study ends with 3 trials, each once', async (t) => {
    const w = world(t);
    const server = await w.server({ TRAINPLANE_SYNC_INTERVAL_SECONDS: '1', TRAINPLANE_LEASE_SECONDS: '3' });
    await w.agent(server, { node: 'tr-a', vcpus: 4 });
    await w.agent(server, { node: 'tr-b', vcpus: 4 });
    const id = 'agent_kill';
    await createJob(server.base, PROJECT, id, study(w, { maxTrials: 3, maxParallelTrials: 1 }));
    await waitFor(() => w.started().length === 1, 30_000, 'trial 1 started')
      .catch((e) => { throw new Error(`${e.message}\n${w.logs()}`); });
    const [first] = w.started();
    assert.equal(first.trial, 1);
    const victim = w.agentAt(first.cwd);
    const other = w.agents.find((a) => a !== victim);
    assert.ok(victim, `trial 1 runs in ${first.cwd}, on no agent's node`);
    // Its progress is reported: the trial's metric so far.
    await waitFor(async () => (await getJob(server.base, PROJECT, id)).trainingOutput?.trials?.[0]?.finalMetric
      ?.objectiveValue === -1, 20_000, "trial 1's progress in the study's output");

    await victim.kill('SIGKILL');
    // The node's lease passes, its replica is fenced there and started again
    // (attempt 2) on the other node; the study adds no trial meanwhile
    // (maxParallelTrials 1: the restarting trial still counts).
    await waitFor(() => w.started().length >= 2, 40_000, 'trial 1 started again')
      .catch((e) => { throw new Error(`${e.message}\n${w.logs()}`); });
    const [, again, ...more] = w.started();
    assert.deepEqual(more, [], 'nothing else started');
    assert.equal(again.trial, 1, `the restarted trial is trial 1: ${JSON.stringify(w.started())}`);
    assert.equal(w.agentAt(again.cwd), other, `trial 1 restarted on ${other.node}: ${again.cwd}`);
    assert.equal((await getNode(server.base, victim.node)).state, 'LOST');
    await waitFor(() => !processAlive(first.pid), 10_000, 'the first copy of trial 1 is gone (fenced)');
    const running = await getJob(server.base, PROJECT, id);
    assert.deepEqual(running.trainingOutput.trials.map((x) => x.trialId), ['1'], JSON.stringify(running));
    // The lost attempt's measurements are not the restarted trial's: it has
    // reported none yet (early stopping judges it on its new run).
    await waitFor(async () => !(await getJob(server.base, PROJECT, id)).trainingOutput.trials[0].finalMetric,
      10_000, "the lost attempt's measurement dropped from trial 1")
      .catch(async (e) => {
        throw new Error(`${e.message}: ${JSON.stringify((await getJob(server.base, PROJECT, id)).trainingOutput)}`);
      });

    fs.writeFileSync(w.gate, '');
    const done = await waitJobState(server.base, PROJECT, id, ['SUCCEEDED', 'FAILED'], 60_000, w.logs);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assertTrials(done, 3);
    // Trial 1 ran twice (its two attempts), trials 2 and 3 once, all on the node left.
    const starts = w.started();
    assert.deepEqual(starts.map((s) => s.trial), [1, 1, 2, 3], JSON.stringify(starts));
    for (const s of starts.slice(1)) assert.equal(w.agentAt(s.cwd), other, JSON.stringify(s));
    await waitFor(() => pgrep(w.mark).length === 0, 10_000, 'every trainer ended');
    await other.stop();
    for (const s of w.servers) await s.stop();
  });

  it('kill -9 of the scheduler leader mid-study: the other server leads on, the study ends with trials 1..4, each once', async (t) => {
    const w = world(t);
    const env = { TRAINPLANE_SYNC_INTERVAL_SECONDS: '1', TRAINPLANE_LEASE_SECONDS: '10' };
    const s1 = await w.server(env);
    await waitFor(() => leading(s1), 10_000, 'server 1 leads');
    const s2 = await w.server(env);
    assert.equal(await leading(s2), false, 'one leader at a time');
    // The agent and the client talk to server 2: the leader's death cuts off neither.
    const agent = await w.agent(s2, { node: 'ha-1', vcpus: 8 });
    const id = 'leader_kill';
    await createJob(s2.base, PROJECT, id, study(w, { maxTrials: 4, maxParallelTrials: 2 }));
    await waitFor(() => w.started().length === 2, 30_000, 'trials 1 and 2 started')
      .catch((e) => { throw new Error(`${e.message}\n${w.logs()}`); });
    assert.deepEqual(w.started().map((s) => s.trial).sort(), [1, 2]);
    // The first leader added them, in one pass or two: its lines count 2
    // trials in all. (Its stderr can reach this process after the trials
    // have started: wait for the lines, do not read them once.)
    const added = () => [...s1.stderr().matchAll(/study leader_kill: (\d+) trial\(s\) added/g)]
      .reduce((n, m) => n + Number(m[1]), 0);
    await waitFor(() => added() === 2, 10_000, 'the first leader added them')
      .catch((e) => { throw new Error(`${e.message} (${added()}):\n${s1.stderr().slice(-3000)}`); });

    s1.kill();
    await s1.exited;
    await waitFor(() => leading(s2), 20_000, 'server 2 leads')
      .catch((e) => { throw new Error(`${e.message}\n${w.logs()}`); });
    const s2Led = s2.stderr().length;
    fs.writeFileSync(w.gate, '');
    const done = await waitJobState(s2.base, PROJECT, id, ['SUCCEEDED', 'FAILED'], 60_000, w.logs);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assertTrials(done, 4);
    assert.match(s2.stderr().slice(s2Led), /study leader_kill: \d trial\(s\) added/,
      'the new leader added the trials after 1 and 2');
    // Each trial's trainer ran once: the node was never lost.
    assert.deepEqual(w.started().map((s) => s.trial).sort(), [1, 2, 3, 4], JSON.stringify(w.started()));
    assert.equal((await getNode(s2.base, agent.node)).state, 'READY');
    await waitFor(() => pgrep(w.mark).length === 0, 10_000, 'every trainer ended');
    await agent.stop();
    await s2.stop();
  });
});
