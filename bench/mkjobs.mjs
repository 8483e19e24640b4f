// bench/mkjobs.mjs BASE N PROJECT: N ml v1 jobs created in PROJECT, 32 at a
// time, each scripted to run an hour on the emulator's fleet (tools/bench_emulator.sh).
const [base, n, project] = process.argv.slice(2);
let next = 0;
async function worker() {
  while (next < +n) {
    const k = next++;
    const r = await fetch(`${base}/v1/projects/${project}/jobs`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jobId: `j${k}`, labels: { 'trainplane-simulate': 'run-3600s-exit-0' },
        trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: { imageUri: 'x/y:1' } } }),
    });
    if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
  }
}
await Promise.all(Array.from({ length: 32 }, worker));
