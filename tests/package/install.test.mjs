// The Debian package as a user gets it: `apt-get install ./Ponder_….deb` (from `make package`),
// the installed CLI answering on emulated CPUs without AVX2 or AVX as it does on this one, the
// installed app opened under Xvfb as a new user (an empty home folder), then removed again.
// It installs system-wide, so it needs root (or sudo) and replaces an installed `ponder`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchApp, root } from '../e2e/webdriver.mjs';

const release = path.join(process.env.CARGO_TARGET_DIR ?? path.join(root, 'target'), 'release');
const debDir = path.join(release, 'bundle', 'deb');

function packagePath() {
  const debs = fs.existsSync(debDir) ? fs.readdirSync(debDir).filter((f) => f.endsWith('.deb')) : [];
  assert.equal(debs.length, 1, `one .deb in ${debDir}, found ${debs.length}: run "make package" first`);
  return path.join(debDir, debs[0]);
}

/// apt-get as root, or through sudo, with no package sources: it can only use what is installed
/// (`scripts/setup-apt.sh` installs every dependency), so it never reaches the network.
function apt(...args) {
  const none = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-apt-'));
  fs.writeFileSync(path.join(none, 'sources.list'), '');
  const cmd = process.getuid() === 0 ? ['apt-get'] : ['sudo', '-n', 'apt-get'];
  const offline = ['-o', `Dir::Etc::SourceList=${none}/sources.list`, '-o', `Dir::Etc::SourceParts=${none}`];
  const r = spawnSync(cmd[0], [...cmd.slice(1), '-y', '-q', ...offline, ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
  });
  fs.rmSync(none, { recursive: true, force: true });
  assert.equal(r.status, 0, `${cmd.join(' ')} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/// The installed CLI's greedy answer to one question with the 0.5B test model (its Q5_0, Q8_0,
/// Q4_K and Q6_K weights cover every kernel), run directly or through `qemu-x86_64` emulating an
/// older CPU. QEMU stops a program at the first instruction that CPU lacks.
function answer(cpu) {
  const model = path.join(process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models'), 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
  const args = ['chat', '--model', model, '--threads', '2', '--temperature', '0', '--max-tokens', '6', 'What is 17 * 23?'];
  const [cmd, argv] = cpu ? ['qemu-x86_64', ['-cpu', cpu, '/usr/bin/ponder', ...args]] : ['/usr/bin/ponder', args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', env: { ...process.env, PONDER_CPU_KERNEL: undefined }, timeout: 600_000 });
  assert.equal(r.status, 0, `${cmd} ${argv.join(' ')}: ${r.error ?? ''}\n${r.stderr}`);
  // The first line of standard error names the model and the kernels it runs.
  const kernels = r.stderr.match(/\(\w+, (.*) kernels\)/)?.[1];
  return { text: r.stdout, kernels };
}

const installed = () => spawnSync('dpkg-query', ['-W', '-f=${Status}', 'ponder'], { encoding: 'utf8' }).stdout.includes('install ok installed');

test('the .deb installs, its CLI answers alike on older CPUs, the installed app opens on the first-run screen, and it uninstalls', async (t) => {
  const deb = packagePath();
  const fields = execFileSync('dpkg-deb', ['-f', deb, 'Package', 'Depends', 'Section']).toString();
  assert.match(fields, /^Package: ponder$/m);
  // The dependency list comes from the binaries' real library needs.
  assert.match(fields, /libwebkit2gtk-4\.1-0 \(>= [\d.]+\)/);
  assert.match(fields, /libc6 \(>= [\d.]+\)/);
  const names = fields.match(/^Depends: (.*)$/m)[1].split(',').map((d) => d.trim().split(' ')[0]);
  assert.deepEqual(names, [...new Set(names)], 'each dependency is listed once');

  apt('install', '--no-install-recommends', deb);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-package-home-'));
  try {
    assert.ok(installed(), 'dpkg lists ponder as installed');
    // The desktop entry and the icons a launcher looks for, at every size.
    const desktop = fs.readFileSync('/usr/share/applications/Ponder.desktop', 'utf8');
    assert.match(desktop, /^Exec=ponder-app$/m);
    assert.match(desktop, /^Icon=ponder-app$/m);
    for (const size of [16, 24, 32, 48, 64, 128, 256, 512]) {
      const icon = `/usr/share/icons/hicolor/${size}x${size}/apps/ponder-app.png`;
      assert.ok(fs.existsSync(icon), `${icon} is installed`);
    }
    // The CLI came with it, on the PATH.
    const check = spawnSync('ponder', ['check', '\\frac{1}{2}', '0.5'], { encoding: 'utf8', env: { ...process.env, PATH: '/usr/bin:/bin' } });
    assert.equal(check.status, 0, check.stderr);
    assert.match(check.stdout, /^equal$/m);

    // The binaries pick their SIMD at run time: on CPUs without AVX2 (Sandy Bridge, 2011: AVX but
    // no AVX2, FMA or F16C) or without AVX at all (Nehalem, 2008) they run the portable kernels,
    // and every kernel gives the same bits, so the answer is the same text.
    const here = answer(null);
    assert.ok(here.text.length > 0 && ['AVX-512 + AMX', 'AVX-512', 'AVX2'].includes(here.kernels), JSON.stringify(here));
    for (const cpu of ['SandyBridge', 'Nehalem']) {
      const there = answer(cpu);
      assert.equal(there.kernels, 'reference (no SIMD)', cpu);
      assert.equal(there.text, here.text, `${cpu} answers as this CPU does`);
      t.diagnostic(`${cpu}: ${JSON.stringify(there.text)}`);
    }

    // A new user: an empty home folder, no settings, no model anywhere.
    const app = await launchApp(
      { HOME: home, PONDER_DATA_DIR: undefined, PONDER_MODEL: undefined, HF_HOME: undefined, XDG_DATA_HOME: undefined, XDG_CONFIG_HOME: undefined },
      { application: '/usr/bin/ponder-app' },
    );
    try {
      assert.equal(await app.text('[data-testid="first-run"] h1'), 'Welcome to Ponder');
      await app.screenshot('installed-first-run', (png) => png.length > 10_000);
    } finally {
      await app.close();
    }
    // It kept its files where the platform says, in the user's home.
    const dataDir = path.join(home, '.local/share/app.ponder.desktop');
    assert.ok(fs.existsSync(dataDir), `${dataDir} exists`);
  } finally {
    if (installed()) apt('remove', 'ponder');
    fs.rmSync(home, { recursive: true, force: true });
  }
  assert.ok(!installed(), 'ponder is removed');
  for (const f of ['/usr/bin/ponder-app', '/usr/bin/ponder', '/usr/share/applications/Ponder.desktop']) {
    assert.ok(!fs.existsSync(f), `${f} is gone after removal`);
  }
});
