module github.com/hybroute/hybroute/adapters/eino

go 1.26.8
