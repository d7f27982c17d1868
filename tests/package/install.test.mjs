// The Debian package as a user gets it: `apt-get install ./Ponder_….deb` (from `make package`),
// refused on a CPU the binaries cannot run on, the installed app opened under Xvfb as a new user
// (an empty home folder), then removed again.
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
/// (`scripts/setup-apt.sh` installs every dependency), so it never reaches the network. `env` adds
/// to the environment the package's scripts see.
function aptRun(env, ...args) {
  const none = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-apt-'));
  fs.writeFileSync(path.join(none, 'sources.list'), '');
  const cmd = process.getuid() === 0 ? ['apt-get'] : ['sudo', '-n', '--preserve-env=PONDER_CPUINFO', 'apt-get'];
  const offline = ['-o', `Dir::Etc::SourceList=${none}/sources.list`, '-o', `Dir::Etc::SourceParts=${none}`];
  const r = spawnSync(cmd[0], [...cmd.slice(1), '-y', '-q', ...offline, ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...env },
    encoding: 'utf8',
  });
  fs.rmSync(none, { recursive: true, force: true });
  return r;
}

function apt(...args) {
  const r = aptRun({}, ...args);
  const cmd = process.getuid() === 0 ? ['apt-get'] : ['sudo', 'apt-get'];
  assert.equal(r.status, 0, `${cmd.join(' ')} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const installed = () => spawnSync('dpkg-query', ['-W', '-f=${Status}', 'ponder'], { encoding: 'utf8' }).stdout.includes('install ok installed');

test('the .deb installs, the installed app opens on the first-run screen, and it uninstalls', async () => {
  const deb = packagePath();
  const fields = execFileSync('dpkg-deb', ['-f', deb, 'Package', 'Depends', 'Section']).toString();
  assert.match(fields, /^Package: ponder$/m);
  // The dependency list comes from the binaries' real library needs.
  assert.match(fields, /libwebkit2gtk-4\.1-0 \(>= [\d.]+\)/);
  assert.match(fields, /libc6 \(>= [\d.]+\)/);
  const names = fields.match(/^Depends: (.*)$/m)[1].split(',').map((d) => d.trim().split(' ')[0]);
  assert.deepEqual(names, [...new Set(names)], 'each dependency is listed once');

  // On a CPU without AVX2 the binaries could not start: the package refuses to install, and
  // says why. (A copy of this CPU's flags without avx2 and fma stands in for such a CPU.)
  const flags = fs.readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'));
  const older = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-cpu-')), 'cpuinfo');
  fs.writeFileSync(older, flags.replace(/ (avx2|fma)(?= |$)/g, '') + '\n');
  const refused = aptRun({ PONDER_CPUINFO: older }, 'install', '--no-install-recommends', deb);
  assert.notEqual(refused.status, 0, refused.stdout);
  assert.match(refused.stderr + refused.stdout, /Ponder cannot run on this computer: it needs an x86-64 CPU with AVX2 .* this CPU lacks: avx2 fma/);
  assert.ok(!installed(), 'nothing is installed on such a CPU');
  assert.ok(!fs.existsSync('/usr/bin/ponder-app'));
  fs.rmSync(path.dirname(older), { recursive: true, force: true });

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
