// Boots the page: Pyodide from this site, our wheels, then hands over to Python (webdemo.page).
// The page's logic is Python; this file only loads it and reports progress and failures.

const timings = {};
const started = performance.now();
window.atlasWeb = { ready: false, timings };

const $ = (id) => document.getElementById(id);

function step(value, text) {
  $("boot-progress").value = value;
  $("boot-status").textContent = text;
}

function mark(name) {
  timings[name] = Math.round(performance.now() - started);
}

function fail(error) {
  const box = $("boot-error");
  box.textContent = `The page could not start: ${error && error.message ? error.message : error}`;
  box.hidden = false;
  $("boot-status").textContent = "Stopped.";
  document.body.dataset.state = "failed";
  window.atlasWeb.error = String(error && error.message ? error.message : error);
}

async function boot() {
  step(1, "Reading the site manifest…");
  const response = await fetch("site.json", { cache: "no-cache" });
  if (!response.ok) throw new Error(`site.json: HTTP ${response.status}`);
  const manifest = await response.json();
  const base = new URL(".", location.href);
  const pyodideURL = new URL(manifest.pyodide_path, base);

  step(2, `Loading Python (Pyodide ${manifest.pyodide_version})…`);
  const { loadPyodide } = await import(new URL("pyodide.mjs", pyodideURL).href);
  const pyodide = await loadPyodide({ indexURL: pyodideURL.href });
  mark("pyodide");

  step(3, `Installing ${manifest.project_name} ${manifest.project_version}…`);
  const problems = [];
  await pyodide.loadPackage(manifest.wheels.map((wheel) => new URL(wheel, base).href), {
    messageCallback: () => {},
    errorCallback: (message) => problems.push(message),
  });
  if (problems.length) throw new Error(`installing the wheels failed: ${problems.join("; ")}`);
  mark("wheels");

  step(4, "Starting the page…");
  const page = pyodide.pyimport(manifest.entry_module);
  await page.start();
  mark("firstResult");

  step(5, "Ready.");
  $("boot").hidden = true;
  $("boot-timings").textContent =
    `Pyodide ${timings.pyodide} ms · wheels ${timings.wheels} ms · first result ${timings.firstResult} ms ` +
    "after the page started loading";
  Object.assign(window.atlasWeb, { ready: true, pyodide, manifest });
  document.body.dataset.state = "ready";
}

boot().catch(fail);
