{ from: 'vendor' }
