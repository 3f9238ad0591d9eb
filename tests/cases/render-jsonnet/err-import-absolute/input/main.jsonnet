{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' },
  data: { passwd: importstr '/etc/passwd' } }
