// A bare Pyodide for trying atlas-web by hand: nothing is installed until "Install atlas-web" is pressed
// (or pyodide.loadPackage is called on window.notebook.pyodide).

const $ = (id) => document.getElementById(id);
window.notebook = { ready: false };

function show(text) {
  $("cell-output").textContent = text;
}

async function boot() {
  const manifest = await (await fetch("site.json", { cache: "no-cache" })).json();
  const base = new URL(".", location.href);
  const pyodideURL = new URL(manifest.pyodide_path, base);
  const { loadPyodide } = await import(new URL("pyodide.mjs", pyodideURL).href);
  const output = [];
  const pyodide = await loadPyodide({
    indexURL: pyodideURL.href,
    stdout: (line) => output.push(line),
    stderr: (line) => output.push(line),
  });
  const wheelURLs = manifest.wheels.map((wheel) => new URL(wheel, base).href);

  $("install").addEventListener("click", async () => {
    $("install").disabled = true;
    $("notebook-status").textContent = "Installing…";
    await pyodide.loadPackage(wheelURLs, { messageCallback: () => {} });
    $("notebook-status").textContent = "atlas-web installed.";
  });
  $("run-cell").addEventListener("click", async () => {
    output.length = 0;
    try {
      const value = await pyodide.runPythonAsync($("cell").value);
      if (value !== undefined) output.push(String(value));
    } catch (error) {
      output.push(String(error.message || error));
    }
    show(output.join("\n"));
  });
  $("install").disabled = false;
  $("run-cell").disabled = false;
  $("notebook-status").textContent = `Pyodide ${manifest.pyodide_version} ready.`;
  Object.assign(window.notebook, { ready: true, pyodide, manifest, wheelURLs });
  document.body.dataset.state = "ready";
}

boot().catch((error) => {
  $("notebook-status").textContent = `Python could not start: ${error.message || error}`;
  document.body.dataset.state = "failed";
});
