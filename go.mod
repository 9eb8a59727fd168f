module github.com/hybroute/hybroute

go 1.26.8
