// prefs.js - the project and location the console opens with: the last ones
// used (localStorage), else the caller's first project, else "demo".

export function defaults() {
  let project = null;
  let location = null;
  try {
    project = localStorage.getItem('trainplane.project');
    location = localStorage.getItem('trainplane.location');
  } catch { /* storage off */ }
  if (!project) {
    const ps = (window.trainplaneConsole?.me?.projects ?? []).filter((p) => p !== '*');
    project = ps[0] || 'demo';
  }
  return { project, location: location || 'us-central1' };
}

export function remember(project, location) {
  try {
    if (project) localStorage.setItem('trainplane.project', project);
    if (location) localStorage.setItem('trainplane.location', location);
  } catch { /* storage off */ }
}
