// Validates Kubernetes objects against the API schemas of the npm packages kubernetes-models and
// @kubernetes-models/prometheus-operator (installed by tests/test_kubernetes.py from
// package-lock.json beside this file).
// Usage: node validate.cjs NODE_MODULES_FOLDER < objects.json
//   objects.json: {"SOURCE": [object, ...], ...}, the objects of each rendering by its name
// Prints one line per problem ("SOURCE: Kind/name: /path: what") and exits 1 if there is any.
//
// The schemas' validators check types, enums and required fields but accept fields they do not
// know (the API server drops or refuses them: a misspelt `hostPid` would silently do nothing).
// So each object is handed to its validator behind a proxy that notes which fields the
// validator read: a field no schema read is unknown to the API.
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const modules = process.argv[2];
const load = createRequire(path.join(path.resolve(modules), "package.json"));

// apiVersion/kind -> [package, a model of it, its schema]. The schemas are not among the
// packages' exports, so they are loaded by path from beside the model.
const KNOWN = {
  "v1/Namespace": ["kubernetes-models", "v1/Namespace", "IoK8sApiCoreV1Namespace"],
  "v1/ServiceAccount": ["kubernetes-models", "v1/ServiceAccount", "IoK8sApiCoreV1ServiceAccount"],
  "v1/Service": ["kubernetes-models", "v1/Service", "IoK8sApiCoreV1Service"],
  "v1/ConfigMap": ["kubernetes-models", "v1/ConfigMap", "IoK8sApiCoreV1ConfigMap"],
  "apps/v1/DaemonSet": ["kubernetes-models", "apps/v1/DaemonSet", "IoK8sApiAppsV1DaemonSet"],
  "monitoring.coreos.com/v1/ServiceMonitor": ["@kubernetes-models/prometheus-operator",
    "monitoring.coreos.com/v1/ServiceMonitor", "MonitoringCoreosComV1ServiceMonitor"],
  "monitoring.coreos.com/v1/PodMonitor": ["@kubernetes-models/prometheus-operator",
    "monitoring.coreos.com/v1/PodMonitor", "MonitoringCoreosComV1PodMonitor"],
  "monitoring.coreos.com/v1/PrometheusRule": ["@kubernetes-models/prometheus-operator",
    "monitoring.coreos.com/v1/PrometheusRule", "MonitoringCoreosComV1PrometheusRule"],
};

function schemaValidator([pkg, model, schema]) {
  const modelFile = load.resolve(`${pkg}/${model}`);
  const root = modelFile.slice(0, modelFile.lastIndexOf(pkg) + pkg.length);
  return load(path.join(root, "_schemas", `${schema}.js`)).validate;
}

// `value` behind proxies that take each field's path out of `unread` when the validator reads it.
function watched(value, where, unread) {
  if (value === null || typeof value !== "object")
    return value;
  const fields = new Set(Object.keys(value));
  for (const field of fields)
    unread.add(`${where}/${field}`);
  return new Proxy(value, {
    get(target, field, receiver) {
      if (typeof field === "string" && fields.has(field)) {
        unread.delete(`${where}/${field}`);
        return watched(target[field], `${where}/${field}`, unread);
      }
      return Reflect.get(target, field, receiver);
    },
  });
}

// The validators are compiled without ajv's messages: one from the keyword and its parameters.
function describe(error) {
  const said = Object.entries(error.params || {}).map(([key, value]) => `${key} ${JSON.stringify(value)}`);
  return `fails ${error.keyword}${said.length ? ` (${said.join(", ")})` : ""}`;
}

const sources = JSON.parse(fs.readFileSync(0, "utf8"));
const problems = [];
for (const [source, objects] of Object.entries(sources)) for (const object of objects) {
  const name = `${source}: ${object.kind}/${object.metadata && object.metadata.name}`;
  const known = KNOWN[`${object.apiVersion}/${object.kind}`];
  if (!known) {
    problems.push(`${name}: no schema here for ${object.apiVersion} ${object.kind}`);
    continue;
  }
  const validate = schemaValidator(known);
  const unread = new Set();
  if (!validate(watched(object, "", unread)))
    for (const error of validate.errors)
      problems.push(`${name}: ${error.instancePath || "/"}: ${describe(error)}`);
  for (const field of unread)
    problems.push(`${name}: ${field}: not a field of ${object.apiVersion} ${object.kind}`);
}
for (const problem of problems)
  console.log(problem);
process.exit(problems.length ? 1 : 0);
